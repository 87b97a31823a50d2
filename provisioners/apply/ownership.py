"""Who manages the objects an apply is about to write, and what they are now: read as cheaply as
the set allows.

Before an object is applied the :class:`~provisioners.apply.applier.Applier` checks that it does
not exist under another owner. Read one by one, that is a GET per object: half the requests of a
large install. :class:`Owners` instead reads a collection (one kind in one namespace) with one
list of metadata only (``PartialObjectMetadataList``, paged) when the set has at least
:data:`LIST_FROM` objects in it, and GETs the others. Objects the owner's inventory already lists
were applied by this owner and are not read at all.

When the applier reports what an apply changes (:mod:`provisioners.apply.fieldchanges`) it needs
the objects themselves: :class:`Owners` made with ``keep`` keeps every object it reads, lists whole
objects instead of their metadata (the same number of requests, more bytes; only the objects of
the set are kept), and reads the objects of the inventory too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import Any

from provisioners.apply.kubeapi import METADATA_LIST, KubeAPI, NotFound, Resource
from provisioners.apply.objects import JSONObject, ObjectRef, owner_of, ref_of

__all__ = ["LIST_FROM", "Owners"]

LIST_FROM = 10
"""Objects of one collection in the set from which one list is cheaper than a GET each."""

PAGE = 500

Labelled = tuple[str, str] | None


class Owners:
    """The current owner of each object of one apply, and with ``keep`` the object as it is (see
    the module docstring)."""

    def __init__(
        self,
        api: KubeAPI,
        objects: Iterable[JSONObject],
        owned: Collection[ObjectRef] = (),
        *,
        keep: bool = False,
    ) -> None:
        self.api = api
        self.owned = set(owned)
        self.keep = keep
        self.requests = 0
        """How many requests the lookups sent (for tests and benchmarks)."""
        self._sizes: Counter[tuple[str, str, str]] = Counter()
        self._names: set[str] = set()
        for obj in objects:
            try:
                ref = ref_of(obj)
            except ValueError:
                continue  # the applier names it
            self._sizes[(ref.api_version, ref.kind, ref.namespace)] += 1
            self._names.add(ref.name)
        self._listed: dict[str, dict[str, JSONObject]] = {}
        self._read: dict[ObjectRef, JSONObject | None] = {}

    def holder(
        self, ref: ObjectRef, resource: Resource, me: tuple[str, str], *, declared_namespace: str
    ) -> str | None:
        """Who other than ``me`` (kind, name) manages the existing object ``ref``, in words;
        None when it does not exist or is ``me``'s. ``declared_namespace`` is the namespace the
        object names (before defaulting)."""
        if ref in self.owned:
            return None
        existing = self.existing(ref, resource, declared_namespace=declared_namespace)
        if existing is None:
            return None
        owner: Labelled = owner_of(existing)
        if owner == me:
            return None
        return f"{owner[0]} {owner[1]}" if owner else "no pivoter or rukpak owner"

    def existing(
        self, ref: ObjectRef, resource: Resource, *, declared_namespace: str
    ) -> JSONObject | None:
        """The object ``ref`` as it is (only its metadata when listed without ``keep``), None
        when it does not exist; with ``keep`` read once, whoever asks."""
        if ref in self._read:
            return self._read[ref]
        collection = resource.path(ref.namespace)
        found: JSONObject | None
        if self._sizes[(ref.api_version, ref.kind, declared_namespace)] >= LIST_FROM:
            if collection not in self._listed:
                self._listed[collection] = self._list(collection)
            found = self._listed[collection].get(ref.name)
        else:
            self.requests += 1
            try:
                found = self.api.request("GET", resource.path(ref.namespace, ref.name))
            except NotFound:
                found = None
        if self.keep:
            self._read[ref] = found
        return found

    def _list(self, collection: str) -> dict[str, JSONObject]:
        """The objects of ``collection`` (their metadata only, without ``keep``) that the set
        names, by name."""
        found: dict[str, JSONObject] = {}
        token = ""
        accept = "application/json" if self.keep else METADATA_LIST
        while True:
            query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            self.requests += 1
            page: dict[str, Any] = self.api.send("GET", collection, query=query, accept=accept).body
            for item in page.get("items") or []:
                name = str((item.get("metadata") or {}).get("name") or "")
                if name in self._names:
                    found[name] = item
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return found
