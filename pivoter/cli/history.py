"""``pivoter history INPUT``: the ResolveSet revisions of an input, what each changed, its
outcome and when it was written."""

from __future__ import annotations

import argparse
from typing import Any

from pivoter.cli._inputs import Target, run_on_input
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit
from pivoter.resolutions import plan, summary
from resolver.resolveset import ResolveSet, ResolveSetError

__all__ = ["history_rows", "run"]


def _outcome(number: int, status: dict[str, Any], spec: dict[str, Any]) -> str:
    pivot = status.get("pivot") or {}
    notes = []
    if number == status.get("activeRevision"):
        notes.append("active")
    if number == status.get("lastSuccessfulRevision"):
        notes.append("last successful")
    if number == spec.get("pinnedRevision"):
        notes.append("pinned")
    if number == pivot.get("failedRevision"):
        notes.append(f"failed ({pivot.get('phase')}: {pivot.get('failedBundle') or 'see status'})")
    elif number == pivot.get("revision") and pivot.get("phase") not in (None, "Succeeded"):
        notes.append(f"pivot {pivot.get('phase')}")
    if number == (status.get("pendingPlan") or {}).get("revision"):
        notes.append("awaiting approval")
    return ", ".join(notes) or "superseded"


def history_rows(target: Target) -> list[dict[str, Any]]:
    """One row per stored revision, oldest first."""
    rows = []
    previous: ResolveSet | None = None
    spec = dict(target.obj.get("spec") or {})
    for revision in target.store.list(target.ref):
        try:
            document: ResolveSet | None = revision.resolveset()
        except ResolveSetError:
            document = None
        changes = "unreadable"
        bundles: list[str] = []
        if document is not None:
            changes = summary(plan(previous, document, revision=revision.number, active=None))
            bundles = [f"{e.package}@{e.version}" for e in document.entries]
            previous = document
        rows.append(
            {
                "revision": revision.number,
                "created": revision.created,
                "bundles": bundles,
                "changes": changes,
                "outcome": _outcome(revision.number, target.status, spec),
                "selectionHash": revision.selection_hash,
                "problem": revision.problem or None,
            }
        )
    return rows


def _human(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no revisions"
    lines = []
    for row in rows:
        lines.append(
            f"r{row['revision']}  {row['created'] or '-'}  {row['outcome']}\n"
            f"    bundles: {', '.join(row['bundles']) or '-'}\n"
            f"    changes: {row['changes']}"
            + (f"\n    PROBLEM: {row['problem']}" if row["problem"] else "")
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter history``."""

    def body(target: Target) -> int:
        emit(history_rows(target), args.output, _human)
        return int(ExitCode.OK)

    return run_on_input(args, body)
