"""ResolveSet revisions of one input, stored as immutable ConfigMaps in the daemon's namespace.

:class:`RevisionStore` is what the controllers of every input kind call: ``write``
a new selection (a no-op when the latest revision already holds the same selection hash),
``latest`` and ``list`` the history, ``verify`` that a revision they rely on is still what pivoter
wrote, and ``collect_garbage`` beyond the history limit. It reads revisions by their labels
through its client, which may answer from an informer cache with its own writes read back
(:class:`~pivoter.runtime.cachedreads.CachedReads`): a view may then miss what another writer
wrote a moment ago. Revisions are numbered with create-and-retry: two writers racing for
``r<N>`` both try to create it, the loser sees ``AlreadyExists``, returns the winner's revision
when it holds the same selection, and otherwise moves to ``r<N+1>`` (never back to a number
already taken, however stale its view).
"""

from __future__ import annotations

import builtins
import enum
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.apis.resources import CONFIG_MAPS
from pivoter.kube import Conflict, Kube, NotFound
from pivoter.resolvesets.document import Revision, decode, encode, selector
from pivoter.resolvesets.history import revisions_to_remove
from pivoter.resolvesets.metrics import RevisionMetrics
from pivoter.resolvesets.naming import InputRef, revision_name
from resolver.resolveset import ResolveSet

__all__ = ["CONFIG_MAPS", "RevisionState", "RevisionStore", "Verification", "WriteConflict"]

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 20


class WriteConflict(Exception):
    """Other writers kept taking the next revision number; retry the reconcile later."""


class RevisionState(enum.Enum):
    """What :meth:`RevisionStore.verify` found."""

    INTACT = "Intact"
    MISSING = "Missing"
    MODIFIED = "Modified"


@dataclass(frozen=True, slots=True)
class Verification:
    """The outcome of checking one revision against what pivoter wrote."""

    state: RevisionState
    message: str
    current: Revision | None = None
    """The revision as stored now (None when missing or no longer a revision)."""

    @property
    def ok(self) -> bool:
        """Whether the revision is stored exactly as written."""
        return self.state is RevisionState.INTACT


class RevisionStore:
    """The ResolveSet revisions of every input, in ``namespace``."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        metrics: RevisionMetrics | None = None,
        *,
        prepare: Callable[[ResolveSet, Mapping[str, Any] | None], ResolveSet] | None = None,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.metrics = metrics
        self.prepare = prepare
        """Called once for each new revision with its document and the input (the ``owner`` of
        :meth:`write`), before it is written (never for a selection the latest revision already
        has): the daemon pins and verifies the images there (:mod:`pivoter.inputs.pinning`). It
        must keep the selection hash."""

    # ------------------------------------------------------------------ reading

    def list(self, ref: InputRef) -> builtins.list[Revision]:
        """Every stored revision of ``ref``, oldest first (hand-modified ones included, with
        :attr:`Revision.problem` set)."""
        items, _ = self.kube.list(CONFIG_MAPS, self.namespace, label_selector=selector(ref))
        revisions = [r for r in map(decode, items) if r is not None and r.input == ref]
        return sorted(revisions, key=lambda r: r.number)

    def latest(self, ref: InputRef) -> Revision | None:
        """The newest revision of ``ref``, or None when it has none."""
        revisions = self.list(ref)
        return revisions[-1] if revisions else None

    def get(self, ref: InputRef, number: int) -> Revision | None:
        """Revision ``number`` of ``ref``, or None when it does not exist."""
        config_map = self._config_map(ref, revision_name(ref, number))
        revision = decode(config_map) if config_map is not None else None
        return revision if revision is not None and revision.input == ref else None

    def _taken(self, ref: InputRef, number: int) -> Revision | None:
        """Revision ``number`` of ``ref`` as another writer just created it: read from the API
        server (a cache may not show it yet)."""
        path = CONFIG_MAPS.path(self.namespace, revision_name(ref, number))
        try:
            revision = decode(self.kube.request("GET", path))
        except NotFound:
            return None
        return revision if revision is not None and revision.input == ref else None

    def _config_map(self, ref: InputRef, name: str) -> dict[str, Any] | None:
        """The ConfigMap ``name`` among ``ref``'s revisions (by their labels: in the daemon, the
        cache of revisions answers, whose events queue the inputs), or None."""
        items, _ = self.kube.list(CONFIG_MAPS, self.namespace, label_selector=selector(ref))
        return next((cm for cm in items if cm["metadata"].get("name") == name), None)

    # ------------------------------------------------------------------ writing

    def write(
        self,
        ref: InputRef,
        resolveset: ResolveSet,
        *,
        after: int = 0,
        owner: Mapping[str, Any] | None = None,
    ) -> Revision:
        """Store ``resolveset`` as the next revision of ``ref`` and return it, or return the
        latest revision unchanged when it is intact and has the same selection hash.
        A new revision's document is first given to :attr:`prepare` (what it raises is raised,
        and nothing is written).

        ``after``: the highest revision number the caller has recorded (e.g. in the input's
        status), so numbering continues even if every ConfigMap was deleted by hand.
        ``owner``: the input object; the revision is garbage-collected with it.
        Raises :class:`WriteConflict` if other writers win every attempt.
        """
        prepared = False
        taken = 0
        for _ in range(MAX_ATTEMPTS):
            latest = self.latest(ref)
            if (
                latest is not None
                and latest.intact
                and latest.selection_hash == resolveset.selection_hash
            ):
                return latest
            number = max(after, taken, latest.number if latest else 0) + 1
            if self.prepare is not None and not prepared:
                document = self.prepare(resolveset, owner)
                if document.selection_hash != resolveset.selection_hash:
                    raise ValueError("prepare changed the selection of the ResolveSet")
                resolveset, prepared = document, True
            body = encode(ref, number, resolveset, self.namespace)
            if owner is not None:
                body["metadata"]["ownerReferences"] = [_owner_reference(owner)]
            try:
                created = self.kube.create(CONFIG_MAPS, body, self.namespace)
            except Conflict:
                winner = self._taken(ref, number)
                if (
                    winner is not None
                    and winner.intact
                    and winner.selection_hash == resolveset.selection_hash
                ):
                    return winner
                log.info("%s: revision %d was taken by another writer; retrying", ref, number)
                taken = number
                continue
            revision = decode(created)
            assert revision is not None  # we just encoded it
            log.info(
                "%s: wrote ResolveSet revision %d (%s)", ref, number, resolveset.selection_hash
            )
            if self.metrics is not None:
                self.metrics.written.labels(ref.kind).inc()
            return revision
        raise WriteConflict(
            f"{ref}: could not claim a new ResolveSet revision in {MAX_ATTEMPTS} attempts; "
            "other writers kept taking the next number"
        )

    # ------------------------------------------------------------------ checking

    def describe(self, ref: InputRef, number: int) -> str:
        """``ResolveSet revision N of Kind/name (ConfigMap ns/name)``, as reports name one."""
        where = f"ConfigMap {self.namespace}/{revision_name(ref, number)}"
        return f"ResolveSet revision {number} of {ref} ({where})"

    def verify(self, revision: Revision) -> Verification:
        """Check that ``revision`` (as pivoter read or wrote it) is still stored unchanged."""
        what = self.describe(revision.input, revision.number)
        config_map = self._config_map(revision.input, revision.name)
        if config_map is None:  # deleted (or its labels no longer name the input)
            return Verification(RevisionState.MISSING, f"{what} is missing: it was deleted")
        current = decode(config_map)
        if current is None or current.input != revision.input:
            return Verification(
                RevisionState.MODIFIED,
                f"{what} was replaced by a ConfigMap that is not a revision of {revision.input}",
            )
        if current.problem:
            return Verification(RevisionState.MODIFIED, f"{what}: {current.problem}", current)
        if (current.checksum, current.selection_hash) != (
            revision.checksum,
            revision.selection_hash,
        ):
            return Verification(
                RevisionState.MODIFIED,
                f"{what} was deleted and re-created with other content (checksum "
                f"{current.checksum}, expected {revision.checksum})",
                current,
            )
        return Verification(RevisionState.INTACT, f"{what} is intact", current)

    # ------------------------------------------------------------------ history

    def collect_garbage(
        self,
        ref: InputRef,
        *,
        keep: int,
        protect: Collection[int | None] = (),
    ) -> builtins.list[int]:
        """Delete revisions of ``ref`` beyond the newest ``keep``, never one in ``protect``
        (the active and last successful revisions). Returns the numbers this call deleted,
        oldest first.
        The caller decides when (:mod:`pivoter.inputs.collector`: only while the input is
        settled)."""
        revisions = {r.number: r for r in self.list(ref)}
        removed: builtins.list[int] = []
        for number in revisions_to_remove(revisions, keep=keep, protect=protect):
            try:
                self.kube.delete(CONFIG_MAPS, revisions[number].name, self.namespace)
            except NotFound:
                # Removed first by another replica, a person, or this collector's previous run
                # (read from a cache that had not seen that deletion yet): not counted again.
                continue
            removed.append(number)
        if removed:
            log.info("%s: removed ResolveSet revisions %s (history limit %d)", ref, removed, keep)
            if self.metrics is not None:
                self.metrics.collected.labels(ref.kind).inc(len(removed))
        return removed


def _owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    metadata = owner.get("metadata") or {}
    if not metadata.get("uid") or not metadata.get("name"):
        raise ValueError("an owner needs metadata.name and metadata.uid")
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": metadata["name"],
        "uid": metadata["uid"],
        "blockOwnerDeletion": False,
    }
