"""``pivoter adopt``: take over operators OLM v0 installed, in place, or hand them back.

``--subscription NS/NAME`` adopts one Subscription, ``--olm-namespace NS`` every Subscription of
a namespace (one Resolution each). First everything is surveyed and checked
(:mod:`pivoter.olmv0.refusals`): one refusal refuses the whole command (exit 3) with every
reason, and nothing is changed. ``--dry-run`` prints the plan and stops. Otherwise each
adoption is started and driven step by step (:mod:`pivoter.olmv0.handover`) until adopted; the
daemon must run (its Resolution controller installs the child that takes the objects over).
Killed midway, the same command resumes from the step recorded on the Resolution.

``--undo`` hands adopted operators back to OLM v0 while it is still installed
(:mod:`pivoter.olmv0.undo`).

``--check`` changes nothing: it gives each operator asked about (``--all``: every Subscription
and every ClusterExtension of the cluster) its verdict and every reason for it
(:mod:`pivoter.olmv0.check`); exit 3 when one is refused or conflicts. ``--backup DIR`` writes
OLM v0's objects of each Subscription to DIR before the first change
(:mod:`pivoter.olmv0.backup`); a DIR that cannot be written stops the command there.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from typing import TYPE_CHECKING, Any

from pivoter.cli.commands._common import (
    Subparsers,
    add_command,
    add_kubeconfig_flag,
    add_output_flag,
    set_handler,
)
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.flags import Name, NamespacedName, ObjectKey, Seconds, StoreDirectory
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pivoter.kube import Kube
    from pivoter.olmv0.check import AdoptionCheck
    from pivoter.olmv0.survey import InstalledOperator
    from pivoter.olmv1.leftovers import LeftoverFinding

__all__ = ["human_check", "register", "run"]

POLL = 1.0


def register(subparsers: Subparsers) -> None:
    """Add ``adopt``."""
    adopt = add_command(
        subparsers,
        "adopt",
        "take over operators OLM v0 installed (a Subscription, or every Subscription of a "
        "namespace) without reinstalling them; --undo hands them back",
    )
    which = adopt.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--subscription",
        type=NamespacedName(),
        metavar="NAMESPACE/NAME",
        help="the OLM v0 Subscription to adopt",
    )
    which.add_argument(
        "--olm-namespace",
        type=Name("dns-label", "namespace"),
        metavar="NAMESPACE",
        help="adopt every Subscription of this namespace (one Resolution each)",
    )
    which.add_argument(
        "--all",
        action="store_true",
        help="with --check: every Subscription and every ClusterExtension of the cluster",
    )
    adopt.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (or the reasons it is refused) and change nothing",
    )
    mode = adopt.add_mutually_exclusive_group()
    mode.add_argument(
        "--check",
        action="store_true",
        help="change nothing: say of each operator whether it is Adoptable, Refused, Adopted, "
        "InProgress or in Conflict, with every reason (exit 3 when one is refused or conflicts)",
    )
    mode.add_argument(
        "--undo",
        action="store_true",
        help="hand adopted operators back to OLM v0 (re-creates their Subscriptions)",
    )
    mode.add_argument(
        "--backup",
        type=StoreDirectory("--backup"),
        metavar="DIR",
        help="before anything changes, write each Subscription, its OperatorGroup, CSV and "
        "InstallPlans to DIR/<namespace>-<subscription>.yaml (created if missing)",
    )
    adopt.add_argument(
        "--timeout",
        type=Seconds(),
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for each adoption (default %(default)g)",
    )
    add_kubeconfig_flag(adopt)
    add_output_flag(adopt)
    set_handler(adopt, run)


def _targets(args: argparse.Namespace) -> tuple[str, str]:
    """The Subscription's namespace and name, or ``--olm-namespace`` and ``""`` (all of it)."""
    subscription: ObjectKey | None = args.subscription
    if subscription is not None:
        return subscription.namespace, subscription.name
    return args.olm_namespace, ""


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter adopt``."""
    from pivoter.kube import Kube, KubeConfigError, KubeError, load_client

    if args.all and not args.check:
        error("--all is only for --check (adopt a namespace with --olm-namespace)")
        return int(ExitCode.USAGE)
    if args.check and args.dry_run:
        error("--check and --dry-run both change nothing: give one of them")
        return int(ExitCode.USAGE)
    try:
        kube = Kube(load_client(args.kubeconfig))
    except KubeConfigError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        if args.check:
            return _check(kube, args)
        if args.undo:
            return _undo(kube, args)
        return _adopt(kube, args)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)


def _adopt(kube: Kube, args: argparse.Namespace) -> int:
    from pivoter.kube import NotFound
    from pivoter.olmv0 import (
        groups,
        handover,
        mapping,
        namespace_refusals,
        plan_for,
        refusals,
        survey,
    )

    namespace, name = _targets(args)
    try:
        found = survey(kube, namespace, name)
    except NotFound:
        # Past the point of no return the Subscription is gone: the adoption it started is
        # resumed from its Resolution (a command killed there finishes what it began).
        started = _existing(kube, mapping.resolution_name(namespace, name))
        if started is None or not (started["metadata"].get("annotations") or {}).get(
            mapping.ANNOTATION_ADOPTION
        ):
            error(f"Subscription {namespace}/{name} does not exist")
            return int(ExitCode.INVALID)
        if args.dry_run:
            error(f"Subscription {namespace}/{name}: its adoption is under way")
            return int(ExitCode.OK)
        result = _drive(kube, str(started["metadata"]["name"]), args.timeout)
        emit({"adoptions": [result]}, args.output, _human_results)
        return int(ExitCode.OK if result["step"] == handover.ADOPTED else ExitCode.FAILURE)
    reasons = [] if name else namespace_refusals(found)
    # An operator and the dependencies OLM v0 installed for it go together (one group each).
    whole = survey(kube, namespace) if name else found
    if name:
        group = groups.group_of(found.installed[0], whole.installed)
        adoptions = [(group[0], group[1:])]
        reasons += groups.held_back_by(group, whole.installed)
    else:
        adoptions = groups.partition(found.installed)
    for primary, dependencies in adoptions:
        existing = _existing(kube, mapping.resolution_name(namespace, primary.name))
        if existing is not None:
            continue  # already started: resume it below, whatever the survey says now
        for member in (primary, *dependencies):
            reasons += refusals(member)
    if reasons:
        for reason in reasons:
            error(f"refused: {reason}")
        return int(ExitCode.INVALID)
    plans = [plan_for(kube, primary, dependencies) for primary, dependencies in adoptions]
    members = [m for primary, dependencies in adoptions for m in (primary, *dependencies)]
    if args.backup is not None and not _backup(args.backup, members):
        return int(ExitCode.FAILURE)
    if args.dry_run:
        for (primary, dependencies), plan in zip(adoptions, plans, strict=True):
            plan["preflight"] = _preflight(kube, primary, dependencies, args.timeout)
        emit({"dryRun": True, "adoptions": plans}, args.output, _human_plan)
        return int(ExitCode.OK)
    names = []
    for (primary, dependencies), plan in zip(adoptions, plans, strict=True):
        resolution = str(plan["resolution"]["metadata"]["name"])
        if _existing(kube, resolution) is None:
            handover.start(kube, primary, resolution, dependencies)
        names.append(resolution)
    results = [_drive(kube, resolution, args.timeout) for resolution in names]
    emit({"adoptions": results}, args.output, _human_results)
    ok = all(r["step"] == handover.ADOPTED for r in results)
    return int(ExitCode.OK if ok else ExitCode.FAILURE)


PREFLIGHT_WAIT = 120.0
"""The longest ``--dry-run`` waits for the daemon to check the takeover."""


def _preflight(
    kube: Kube,
    primary: InstalledOperator,
    dependencies: Sequence[InstalledOperator],
    timeout: float,
) -> dict[str, Any]:
    """What the takeover would change in the live objects, field by field, as the daemon checks
    it before OLM v0 lets go (pull, unpack, convert, server-side dry run): a paused Resolution
    that is no adoption (nothing drives it past planning) is made for the check and deleted
    again. Without a daemon to answer in time, says so."""
    from pivoter.apis.resources import RESOLUTIONS
    from pivoter.apis.views import ANNOTATION_TAKEOVER
    from pivoter.kube import Conflict, NotFound
    from pivoter.olmv0 import mapping
    from provisioners.formats.registry_v1.names import bounded_name

    name = bounded_name("olmv0-dry-run", primary.namespace, primary.name)
    body = mapping.resolution_for(primary, name=name, adoption_step="", dependencies=dependencies)
    metadata = body["metadata"]
    metadata["labels"] = {}
    metadata["annotations"] = {
        k: v
        for k, v in metadata["annotations"].items()
        if k == ANNOTATION_TAKEOVER  # an input of its own, not an adoption
    }
    with contextlib.suppress(Conflict):  # an earlier dry run's, killed before its delete
        kube.create(RESOLUTIONS, body)
    deadline = time.monotonic() + min(timeout, PREFLIGHT_WAIT)
    found: dict[str, Any] = {}
    try:
        while time.monotonic() < deadline:
            try:
                res = kube.get(RESOLUTIONS, name)
            except NotFound:
                break
            objects = ((res.get("status") or {}).get("pendingPlan") or {}).get("objects") or {}
            if "problem" in objects or "restarts" in objects:
                found = {
                    k: objects[k]
                    for k in ("problem", "dryRun", "changes", "restarts", "unread")
                    if k in objects
                }
                break
            time.sleep(POLL)
    finally:
        with contextlib.suppress(NotFound):
            kube.delete(RESOLUTIONS, name)
    return found or {
        "problem": "not checked: no pivoter daemon answered within "
        f"{min(timeout, PREFLIGHT_WAIT):g} s (the check pulls and dry-runs the bundles)"
    }


def _backup(directory: Path, operators: Sequence[InstalledOperator]) -> bool:
    """Write the backups (before anything changes); False, said on stderr, when they cannot
    be written."""
    from pivoter.olmv0.backup import BackupError, write_backups

    try:
        written = write_backups(directory, operators)
    except BackupError as exc:
        error(f"{exc}; nothing was changed")
        return False
    for installed, path in zip(operators, written, strict=True):
        sys.stderr.write(f"pivoter: backed up Subscription {installed.ref} to {path}\n")
    return True


def _check(kube: Kube, args: argparse.Namespace) -> int:
    """``--check``: the verdict on each operator asked about; changes nothing."""
    from pivoter.olmv0.check import (
        NothingToCheck,
        check_cluster,
        check_namespace,
        check_subscription,
    )

    try:
        if args.all:
            entries = check_cluster(kube)
        elif args.subscription is not None:
            entries = check_subscription(kube, args.subscription.namespace, args.subscription.name)
        else:
            entries = check_namespace(kube, args.olm_namespace)
    except NothingToCheck as exc:
        error(str(exc))
        return int(ExitCode.INVALID)
    leftovers = _olmv1_leftovers(kube) if args.all else []
    emit(
        {
            "check": [e.to_dict() for e in entries],
            "summary": _counts(entries),
            "olmv1Leftovers": [
                {"problem": f.problem.value, "kind": f.kind, "name": f.name, "message": f.message}
                | ({"namespace": f.namespace} if f.namespace else {})
                | ({"blocks": True} if f.blocks else {})
                for f in leftovers
            ],
        },
        args.output,
        lambda _: "\n".join(
            [human_check(entries)]
            + (["OLM v1 left behind:"] if leftovers else [])
            + [f"  {'BLOCKS ' if f.blocks else ''}{f.message}" for f in leftovers]
        ),
    )
    blocked = any(e.verdict.blocks for e in entries) or any(f.blocks for f in leftovers)
    return int(ExitCode.INVALID if blocked else ExitCode.OK)


def _olmv1_leftovers(kube: Kube) -> list[LeftoverFinding]:
    """What OLM v1 left behind (docs/olm-v1.md): a webhook nobody answers refuses every
    ClusterCatalog once OLM v1 is stopped; its Deployments still running."""
    from pivoter.olmv1.leftovers import findings

    return findings(kube)


def _counts(entries: Sequence[AdoptionCheck]) -> dict[str, int]:
    """How many entries have each verdict, in the order they are printed."""
    counts: dict[str, int] = {}
    for entry in entries:
        counts[entry.verdict.value] = counts.get(entry.verdict.value, 0) + 1
    return counts


CHECK_COLUMNS = ("VERDICT", "KIND", "NAME", "PACKAGE", "INSTALLED")


def human_check(entries: Sequence[AdoptionCheck]) -> str:
    """``--check``'s table: one row per operator, its reasons and notes indented below it,
    and a count of each verdict."""
    if not entries:
        return "nothing to check: no Subscription, ClusterExtension or adoption on the cluster"
    rows = [list(CHECK_COLUMNS)] + [
        [e.verdict.value, e.kind, e.name, e.package or "-", e.installed or "-"] for e in entries
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(CHECK_COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(rows[0], widths, strict=True)).rstrip()]
    for entry, row in zip(entries, rows[1:], strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        lines += [f"    - {reason}" for reason in entry.reasons]
        lines += [f"    note: {note}" for note in entry.notes]
    lines.append(", ".join(f"{n} {verdict}" for verdict, n in _counts(entries).items()))
    return "\n".join(lines)


def _existing(kube: Kube, name: str) -> dict[str, Any] | None:
    from pivoter.apis.resources import RESOLUTIONS
    from pivoter.kube import NotFound

    try:
        return kube.get(RESOLUTIONS, name)
    except NotFound:
        return None


def _drive(kube: Kube, resolution: str, timeout: float) -> dict[str, str]:
    """Advance one adoption until it is done or ``timeout`` passes."""
    from pivoter.olmv0 import handover

    deadline = time.monotonic() + timeout
    last = ""
    while True:
        progress = handover.advance(kube, resolution)
        if progress.step != last:
            last = progress.step
            error(f"{resolution}: {progress.step}: {progress.message}")
        if progress.done:
            break
        if time.monotonic() > deadline:
            progress = handover.AdoptionProgress(
                progress.step, f"timed out after {timeout:g} s: {progress.message}"
            )
            break
        time.sleep(POLL)
    return {"resolution": resolution, "step": progress.step, "message": progress.message}


def _undo(kube: Kube, args: argparse.Namespace) -> int:
    from pivoter.olmv0 import undo

    namespace, name = _targets(args)
    targets = undo.undo_targets(kube, namespace, name)
    if not targets:
        which = f"Subscription {namespace}/{name}" if name else f"namespace {namespace}"
        error(f"{which}: nothing adopted from OLM v0 (no Resolution records it)")
        return int(ExitCode.INVALID)
    if args.dry_run:
        emit(
            {"dryRun": True, "handBack": [undo.describe(t) for t in targets]},
            args.output,
            lambda r: "\n".join(r["handBack"]),
        )
        return int(ExitCode.OK)
    results = []
    for target in targets:
        if target.step:
            error(f"{target.resolution}: resuming the interrupted hand-back at {target.step}")

        def said(progress: undo.UndoProgress, resolution: str = target.resolution) -> None:
            error(f"{resolution}: {progress.step}: {progress.message}")

        results.append(undo.hand_back(kube, target, timeout=args.timeout, on_step=said))
    emit({"handBack": results}, args.output, lambda r: "\n".join(r["handBack"]))
    failed = [r for r in results if not r.startswith("handed back")]
    return int(ExitCode.FAILURE if failed else ExitCode.OK)


def _human_plan(result: dict[str, Any]) -> str:
    lines: list[str] = []
    for plan in result["adoptions"]:
        res = plan["resolution"]
        lines.append(
            f"Subscription {plan['subscription']} (CSV {plan['csv']}, {plan['mode']}) -> "
            f"Resolution {res['metadata']['name']}"
        )
        if plan.get("dependencies"):
            lines.append(
                "  with the dependencies OLM v0 installed for it: Subscription "
                + ", Subscription ".join(plan["dependencies"])
            )
        for package in res["spec"]["packages"]:
            lines.append(
                f"  package {package['name']} channel {package.get('channel', '(default)')}, "
                f"pinned to {package['versionRange']} while adopting; approval "
                f"{res['spec']['approval']}; config {package['config']}"
            )
        lines.append("  steps:")
        lines += [f"    {i}. {step}" for i, step in enumerate(plan["steps"], 1)]
        lines.append(f"  objects taken over in place ({len(plan['takenOver'])}):")
        lines += [f"    {o}" for o in plan["takenOver"]]
        if plan["released"]:
            lines.append("  OLM v0 objects removed (OLM's own records, not the operator's):")
            lines += [f"    {o}" for o in plan["released"]]
        lines += _human_preflight(plan.get("preflight") or {})
    return "\n".join(lines)


def _human_preflight(found: dict[str, Any]) -> list[str]:
    if "problem" in found:
        return [f"  pre-flight: refused before OLM v0 lets go: {found['problem']}"]
    lines = [f"  pre-flight: {found.get('dryRun', '')}"]
    for change in found.get("changes") or []:
        where = "/".join(x for x in (change.get("namespace"), change.get("name")) if x)
        what = [*(change.get("fields") or []), *(change.get("metadata") or [])]
        lines.append(f"    {change.get('kind')} {where}: {', '.join(what)}")
    restarts = found.get("restarts") or []
    lines.append(
        f"  pods replaced: {', '.join(restarts)} (the adoption would be refused)"
        if restarts
        else "  pods replaced: none"
    )
    return lines


def _human_results(result: dict[str, Any]) -> str:
    return "\n".join(f"{r['resolution']}: {r['step']}: {r['message']}" for r in result["adoptions"])
