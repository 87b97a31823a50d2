"""Revision garbage collection as its own small controller, one per input kind: the ResolveSet
revisions of an input beyond its history limit are deleted, oldest first, never the active, the
last successful or the pinned one.

It runs only while the input is settled: an active revision, no pivot in progress and the last
pivot succeeded (cert-manager's revisionmanager collects only while its owner is Ready), and
never while the input is being deleted (the revisions go with it, by their ownerReference).
History is what a person reads to understand a failure and what ``pivoter rollback`` goes back
to, so nothing is taken from it while the input is not where it was asked to be.

Level-triggered: queued by every change of an input and of its revision ConfigMaps; it reads the
input from the informer's cache and the count of revisions from the revisions' cache, and asks
the API server only when there is something to delete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pivoter.inputs.reconciler import Kind
from pivoter.inputs.record import Record
from pivoter.kube import Object
from pivoter.pivot import Phase
from pivoter.resolvesets import RevisionStore
from pivoter.runtime.controller import Result

__all__ = ["RevisionCollector", "settled"]

log = logging.getLogger(__name__)


def settled(record: Record) -> bool:
    """Whether an input with ``record`` is where it was asked to be: an active revision, no
    pivot in progress, and the last pivot (if any) succeeded."""
    if record.active is None or record.pivoting:
        return False
    return record.pivot is None or record.pivot.phase is Phase.SUCCEEDED


@dataclass
class RevisionCollector:
    """Collects one input kind's revisions (see the module docstring)."""

    kind: Kind
    store: RevisionStore
    lookup: Callable[[str], Object | None]
    """The input of this kind by name, from the informer's cache (None: gone)."""
    stored: Callable[[str], int]
    """How many revisions of the input of this kind named so are in the revisions' cache."""

    def reconcile(self, name: str) -> Result | None:
        """Delete what is beyond the input's history limit, if it is settled."""
        obj = self.lookup(name)
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            return None
        record = Record.from_status(obj.get("status"))
        if not settled(record):
            return None
        spec = self.kind.spec_of(obj)
        if self.stored(name) <= spec.history_limit:
            return None
        self.store.collect_garbage(
            spec.ref,
            keep=spec.history_limit,
            protect={record.active, record.last_successful, spec.pinned},
        )
        return None
