"""Which ResolveSet revisions garbage collection may remove: pure logic, no cluster.

The rule (cert-manager's revisionmanager, plus pivoter's protections): keep the newest ``keep``
revisions, always keep every protected revision (the active one and the last successful one, the
revisions a rollback needs). When it runs at all (only while the input is settled, never during a
pivot) is decided by :mod:`pivoter.inputs.collector`. Called by
:meth:`pivoter.resolvesets.RevisionStore.collect_garbage`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

__all__ = ["revisions_to_remove"]


def revisions_to_remove(
    revisions: Iterable[int],
    *,
    keep: int,
    protect: Collection[int | None] = (),
) -> list[int]:
    """The revision numbers to delete, oldest first.

    ``keep`` counts the newest revisions retained (at least 1, so the latest always stays);
    ``protect`` numbers are never returned (None entries are ignored, for "no such revision").
    """
    if keep < 1:
        raise ValueError(f"keep must be at least 1 (the latest revision stays), not {keep}")
    ordered = sorted(set(revisions))
    protected = {number for number in protect if number is not None}
    return [number for number in ordered[: max(0, len(ordered) - keep)] if number not in protected]
