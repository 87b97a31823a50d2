"""A :class:`~pivoter.kube.Kube` whose reads come from the manager's informer caches and whose
writes are read back at once: what lets a reconcile with nothing to do make no request.

controller-runtime's client does the same (reads from the cache, writes to the API server).
``get`` and ``list`` of a kind a synced informer holds are answered from that informer's
cache: ``get`` of a namespaced object from an informer of all namespaces or of its namespace;
``list`` when the informer covers the namespace asked for and its label selector is implied by
the one asked for (then filtered locally, :mod:`pivoter.kube.selectors`; of several, the most
specific one: caches of one kind lag each other, and a pass that an event of one queued must
read that one). Everything else goes
to the API server: field selectors, selectors this module cannot read, kinds no informer holds,
and a ``get`` that a label-selected informer does not hold (the object may exist without the
label). Objects handed out are copies.

What this client writes (create, patch, replace, status, finalizers) is laid over the caches
until their watches deliver it (:class:`~pivoter.runtime.readcache.ReadYourWrites`): a pass
never reads its own input, child or revision as it was before its own write. What other clients
wrote is seen when the watch delivers it, a moment later; the watch event queues the reconcile
again, so a decision made on the older copy is made again on the newer one (level-triggered).
Requests and discovery are the wrapped client's: one request counter, one discovery cache.
"""

from __future__ import annotations

import builtins
import copy
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pivoter.kube import NotFound
from pivoter.kube.client import Kube, Object
from pivoter.kube.selectors import Selector, parse
from pivoter.runtime.cache import Store, object_key
from pivoter.runtime.informer import EventHandler, Informer
from pivoter.runtime.readcache import ReadYourWrites
from provisioners.apply.resources import Resource
from resolver.rules.selectors import LabelRequirement

__all__ = ["CachedReads"]


def _same_kind(a: Resource, b: Resource) -> bool:
    return (a.api_version, a.kind) == (b.api_version, b.kind)


def _key(resource: Resource, name: str, namespace: str | None) -> str:
    return f"{namespace}/{name}" if resource.namespaced and namespace else name


def _labels(obj: Object) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


class CachedReads(Kube):
    """Reads from ``informers()``' caches, writes through ``kube`` (see the module docstring)."""

    def __init__(self, kube: Kube, informers: Callable[[], Iterable[Informer]]) -> None:
        super().__init__(kube.api_client, timeout=kube.timeout)
        self._kube = kube
        self._informers = informers
        self._reads: dict[int, ReadYourWrites] = {}
        self._lock = threading.Lock()

    # -- requests and discovery: the wrapped client's ---------------------------------------

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._kube._send(method, path, **kwargs)

    def resource(self, api_version: str, kind: str) -> Resource:
        return self._kube.resource(api_version, kind)

    def forget(self, api_version: str | None = None) -> None:
        self._kube.forget(api_version)

    # -- the caches ---------------------------------------------------------------------------

    def _covering(self, resource: Resource, namespace: str | None) -> list[Informer]:
        """The synced informers of ``resource`` that hold its objects in ``namespace`` (all
        namespaces when None), with or without a label selector."""
        found = []
        for informer in self._informers():
            if not _same_kind(informer.resource, resource) or not informer.has_synced():
                continue
            if resource.namespaced and informer.namespace and informer.namespace != namespace:
                continue
            found.append(informer)
        return found

    def _view(self, informer: Informer) -> ReadYourWrites:
        with self._lock:
            view = self._reads.get(id(informer))
            if view is None:
                view = self._reads[id(informer)] = ReadYourWrites(informer.store.get)
                informer.add_handler(
                    EventHandler(on_delete=lambda obj: view.deleted(object_key(obj), obj))
                )
            return view

    # -- reads --------------------------------------------------------------------------------

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        key = _key(resource, name, namespace)
        # A cache of every object of the kind answers (absent there: absent); label-selected
        # caches only for what they hold. Callers that know the labels list instead.
        covering = sorted(self._covering(resource, namespace), key=lambda i: bool(i.label_selector))
        for informer in covering:
            found = self._view(informer).get(key)
            if found is not None:
                return copy.deepcopy(found)
            if not informer.label_selector:
                raise NotFound(404, "NotFound", f'{resource.plural} "{name}" not found')
        return super().get(resource, name, namespace)

    def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = 500,
    ) -> tuple[builtins.list[Object], str]:
        wanted = self._selector(label_selector) if not field_selector else None
        if wanted is not None:
            # The most specific cache that holds all of them: the one whose events a controller
            # listing this way watches (caches of one kind lag each other independently).
            candidates = []
            for informer in self._covering(resource, namespace):
                held = self._selector(informer.label_selector)
                if held is not None and wanted.implies(held):
                    candidates.append((len(held.requirements), bool(informer.namespace), informer))
            if candidates:
                informer = max(candidates, key=lambda c: c[:2])[2]
                return self._listed(informer, namespace, wanted), ""
        return super().list(
            resource,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            page_size=page_size,
        )

    @staticmethod
    def _selector(text: str) -> Selector | None:
        try:
            return parse(text)
        except ValueError:
            return None  # the API server says what is wrong with it

    def _listed(
        self, informer: Informer, namespace: str | None, wanted: Selector
    ) -> builtins.list[Object]:
        view = self._view(informer)
        scope = namespace if namespace and informer.resource.namespaced else None
        keys = _candidates(informer.store, wanted, scope)
        keys.update(k for k in view.pending() if scope is None or k.startswith(f"{scope}/"))
        items = []
        for key in sorted(keys):
            obj = view.get(key)
            if obj is not None and wanted.matches(_labels(obj)):
                items.append(copy.deepcopy(obj))
        return items

    # -- writes: read back until the caches have them -------------------------------------------

    def _before(self, resource: Resource, name: str, namespace: str | None) -> dict[int, Object]:
        """What each cache covering the object shows of it as a write is sent: the object the
        write is made on. Read before sending, not once the answer is in: by then the watch
        may already have delivered this write and later ones (another controller's status
        update), and a later version taken for an earlier one would lay this write over it
        for good."""
        key = _key(resource, name, namespace)
        found = {}
        for informer in self._covering(resource, namespace):
            obj = self._view(informer).get(key)
            if obj is not None:
                found[id(informer)] = obj
        return found

    def _wrote(
        self, resource: Resource, after: Object, before: Mapping[int, Object] | None
    ) -> Object:
        """``after`` is the answer to a write made on ``before`` (by informer; None: a create)."""
        metadata = after.get("metadata") or {}
        if not metadata.get("name") or not metadata.get("resourceVersion"):
            return after  # not an object (a Status answer)
        namespace = metadata.get("namespace")
        key = _key(resource, str(metadata["name"]), namespace)
        kept = copy.deepcopy(after)  # the caller may change what it is handed
        for informer in self._covering(resource, namespace):
            view = self._view(informer)
            held = self._selector(informer.label_selector)
            if held is None or not held.matches(_labels(kept)):
                # Not an object this cache holds (or no longer): nothing to read back there.
                view.forget(key)
                continue
            # Not shown when the write was sent (or created): read back until the cache
            # shows it, as a create is.
            view.wrote(key, (before or {}).get(id(informer)), kept)
        return after

    def create(self, resource: Resource, body: Object, namespace: str | None = None) -> Object:
        return self._wrote(resource, super().create(resource, body, namespace), None)

    def replace(self, resource: Resource, body: Object, namespace: str | None = None) -> Object:
        name = str((body.get("metadata") or {}).get("name") or "")
        before = self._before(resource, name, namespace)
        return self._wrote(resource, super().replace(resource, body, namespace), before)

    def merge_patch(
        self, resource: Resource, name: str, patch: Object, namespace: str | None = None
    ) -> Object:
        before = self._before(resource, name, namespace)
        return self._wrote(resource, super().merge_patch(resource, name, patch, namespace), before)

    def patch_status(
        self, resource: Resource, name: str, status: Object, namespace: str | None = None
    ) -> Object:
        before = self._before(resource, name, namespace)
        return self._wrote(
            resource, super().patch_status(resource, name, status, namespace), before
        )


def _candidates(store: Store, wanted: Selector, scope: str | None) -> set[str]:
    """The keys that may meet ``wanted`` in ``scope``: those the label index gives for its
    narrowest ``a=x`` or ``a in (x, y)`` requirement (a pass reads its own few objects, not the
    whole cache), else every key of the scope."""
    # Sizes first, then the keys of the narrowest only: a selector such as "kind=Resolution,
    # name=x" must not copy the thousands of keys of its broad requirement on every read.
    narrowest: tuple[int, LabelRequirement] | None = None
    for requirement in wanted.requirements:
        if requirement.operator not in ("In", "Equals"):
            continue
        size = sum(store.count_labelled(requirement.key, v) for v in requirement.values)
        if narrowest is None or size < narrowest[0]:
            narrowest = (size, requirement)
    if narrowest is None:
        return {object_key(o) for o in store.list(scope)}
    _, requirement = narrowest
    keys = {k for v in requirement.values for k in store.labelled(requirement.key, v)}
    if scope is None:
        return keys
    return {k for k in keys if k.startswith(f"{scope}/")}
