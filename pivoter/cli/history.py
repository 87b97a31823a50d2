"""``pivoter history INPUT``: the ResolveSet revisions of an input, what each changed, its
outcome and when it was written."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pivoter.cli.commands._common import Subparsers, add_command, add_input_arguments, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit

if TYPE_CHECKING:
    from pivoter.cli._inputs import Target
    from pivoter.inputs import Record
    from resolver.resolveset import ResolveSet

__all__ = ["history_rows", "register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``history``."""
    parser = add_command(subparsers, "history", "list the ResolveSet revisions of an input")
    add_input_arguments(parser)
    set_handler(parser, run)


def _outcome(number: int, status: dict[str, Any], record: Record, pinned: int | None) -> str:
    """What revision ``number`` is to its input, from the input's typed record and pin."""
    pivot = record.pivot
    notes = []
    if number == record.active:
        notes.append("active")
    if number == record.last_successful:
        notes.append("last successful")
    if number == pinned:
        notes.append("pinned")
    if number == record.failed_revision:
        phase = pivot.phase.value if pivot is not None else "Failed"
        bundle = (pivot.failed_bundle if pivot is not None else "") or "see status"
        notes.append(f"failed ({phase}: {bundle})")
    elif pivot is not None and number == pivot.revision and not pivot.phase.succeeded:
        notes.append(f"pivot {pivot.phase.value}")
    if number == (status.get("pendingPlan") or {}).get("revision"):
        notes.append("awaiting approval")
    return ", ".join(notes) or "superseded"


def history_rows(target: Target) -> list[dict[str, Any]]:
    """One row per stored revision, oldest first."""
    from pivoter.apis.inputs import parse_input
    from pivoter.apis.views import FieldError
    from pivoter.inputs import Record, plan, summary
    from resolver.resolveset import ResolveSetError

    rows = []
    previous: ResolveSet | None = None
    record = Record.from_status(target.status)
    try:
        pinned = parse_input(target.ref.kind, target.obj).pinned
    except FieldError:
        pinned = None  # an input its view cannot read: its status still says what ran
    for revision in target.store.list(target.ref):
        try:
            document: ResolveSet | None = revision.resolveset()
        except ResolveSetError:
            document = None
        changes = "unreadable"
        bundles: list[str] = []
        verified: list[dict[str, str]] = []
        if document is not None:
            changes = summary(plan(previous, document, revision=revision.number, active=None))
            bundles = [f"{e.package}@{e.version}" for e in document.entries]
            verified = [
                {"package": e.package, "image": e.pinned_image, "signedBy": e.signed_by}
                for e in document.entries
                if e.digest
            ]
            previous = document
        rows.append(
            {
                "revision": revision.number,
                "created": revision.created,
                "bundles": bundles,
                "changes": changes,
                "outcome": _outcome(revision.number, target.status, record, pinned),
                "selectionHash": revision.selection_hash,
                "verified": verified,
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
            + "".join(
                f"\n    {v['package']}: {v['image']}, {v['signedBy']}" for v in row["verified"]
            )
            + (f"\n    PROBLEM: {row['problem']}" if row["problem"] else "")
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter history``."""
    from pivoter.cli._inputs import run_on_input

    def body(target: Target) -> int:
        emit(history_rows(target), args.output, _human)
        return int(ExitCode.OK)

    return run_on_input(args, body)
