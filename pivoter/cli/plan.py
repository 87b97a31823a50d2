"""``pivoter plan INPUT``: what the next pivot of an input would do, without doing it.

Shows the plan the controller published (``status.pendingPlan``: a Manual input waiting for
approval, with the objects its bundles add, remove and move, the result of their server-side
dry run, the fields it would change in existing objects and the workloads whose pods it would
replace; or a paused one); otherwise compares the newest stored revision with the active one.
Either way it adds the daemon's "why not newer" line (the ``UpToDate`` condition) when the input
does not run the newest bundles offered. It does not resolve: the daemon's catalog cache is not
reachable from the command line.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pivoter.cli.commands._common import Subparsers, add_command, add_input_arguments, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit

if TYPE_CHECKING:
    from pivoter.cli._inputs import Target

__all__ = ["current_plan", "register", "run"]


def register(subparsers: Subparsers) -> None:
    """Add ``plan``."""
    parser = add_command(
        subparsers, "plan", "show what the next pivot of an input would do, without doing it"
    )
    add_input_arguments(parser)
    set_handler(parser, run)


def current_plan(target: Target) -> dict[str, Any]:
    """The pending plan, or the newest revision against the active one (``pending: False``
    when nothing would change), with ``whyNotNewer``: the daemon's one-line answer (the
    ``UpToDate`` condition) naming the newest bundle not taken and why."""
    data = _plan(target)
    why = _why_not_newer(target.status)
    if why:
        data["whyNotNewer"] = why
    return data


def _why_not_newer(status: dict[str, Any]) -> str:
    from pivoter.apis.pivoter import TYPE_UP_TO_DATE

    for condition in status.get("conditions") or []:
        if (
            isinstance(condition, dict)
            and condition.get("type") == TYPE_UP_TO_DATE
            and condition.get("status") == "False"
        ):
            return str(condition.get("message") or "")
    return ""


def _plan(target: Target) -> dict[str, Any]:
    from pivoter.inputs import plan
    from resolver.resolveset import ResolveSetError

    pending = target.status.get("pendingPlan")
    if pending:
        return {**pending, "pending": True}
    latest = target.store.latest(target.ref)
    active_number = target.status.get("activeRevision")
    if latest is None or latest.number == active_number:
        return {
            "revision": active_number,
            "pending": False,
            "added": [],
            "changed": [],
            "removed": [],
        }
    active = target.store.get(target.ref, active_number) if active_number else None
    if active_number and active is None:
        return {
            "revision": latest.number,
            "pending": False,
            "problem": f"{target.store.describe(target.ref, active_number)} (active) is missing: "
            "the daemon rebuilds it from what is installed",
        }
    try:
        before = active.resolveset() if active is not None else None
        data = plan(before, latest.resolveset(), revision=latest.number, active=active_number)
    except ResolveSetError as exc:
        return {"revision": latest.number, "pending": False, "problem": str(exc)}
    return {**data, "pending": True}


def _human(data: dict[str, Any]) -> str:
    from pivoter.inputs import summary

    why = [f"why not newer: {data['whyNotNewer']}"] if data.get("whyNotNewer") else []
    if data.get("problem") and not data.get("pending"):
        return "\n".join([f"problem: {data['problem']}", *why])
    if not data.get("pending"):
        return "\n".join([f"nothing to do: revision {data.get('revision')} is active", *why])
    lines = [f"revision {data['revision']} (from {data.get('fromRevision')}): {summary(data)}"]
    for item in [*(data.get("added") or []), *(data.get("changed") or [])]:
        if item.get("image"):
            lines.append(f"  {item['package']}: {item['image']}, {item.get('signedBy') or '-'}")
    objects = data.get("objects") or {}
    for key in ("pending", "problem", "dryRun"):
        if objects.get(key):
            lines.append(f"  {key}: {objects[key]}")
    for sign, key in (("+", "added"), ("-", "removed"), ("~", "moved")):
        for item in objects.get(key) or []:
            where = f"{item['namespace']}/{item['name']}" if item.get("namespace") else item["name"]
            origin = f" (from {item['fromPackage']})" if item.get("fromPackage") else ""
            lines.append(f"  {sign} {item['kind']} {where} [{item['package']}]{origin}")
        hidden = (objects.get("counts") or {}).get(key, 0) - len(objects.get(key) or [])
        if hidden > 0:
            lines.append(f"  {sign} ... and {hidden} more")
    lines += _field_lines(objects)
    return "\n".join(lines + why)


_SHOWN_FIELDS = 3
"""Changed fields (and label/annotation keys) shown per object; ``-o yaml`` shows them all."""


def _field_lines(objects: dict[str, Any]) -> list[str]:
    """One line per existing object the pivot would change (its first few fields), and one
    naming the workloads whose pods it would replace."""
    lines = []
    for item in objects.get("changes") or []:
        where = f"{item['namespace']}/{item['name']}" if item.get("namespace") else item["name"]
        words = [*(item.get("fields") or []), *(item.get("metadata") or [])]
        total = len(words) + int(item.get("moreFields") or 0) + int(item.get("moreMetadata") or 0)
        shown = ", ".join(words[:_SHOWN_FIELDS])
        more = f" and {total - _SHOWN_FIELDS} more" if total > _SHOWN_FIELDS else ""
        lines.append(f"  * {item['kind']} {where} [{item['package']}]: {shown}{more}")
    if objects.get("moreChanges"):
        lines.append(f"  * ... and {objects['moreChanges']} more changed")
    restarts = list(objects.get("restarts") or [])
    if restarts:
        more = f" and {objects['moreRestarts']} more" if objects.get("moreRestarts") else ""
        lines.append(f"  pods replaced: {', '.join(restarts)}{more}")
    if objects.get("unread"):
        lines.append(f"  not compared (may not be read): {', '.join(objects['unread'])}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter plan``."""
    from pivoter.cli._inputs import run_on_input

    def body(target: Target) -> int:
        emit(current_plan(target), args.output, _human)
        return int(ExitCode.OK)

    return run_on_input(args, body)
