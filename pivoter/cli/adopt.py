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
"""

from __future__ import annotations

import argparse
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
from pivoter.cli.flags import Name, NamespacedName, ObjectKey, Seconds
from pivoter.cli.output import emit, error

if TYPE_CHECKING:
    from pivoter.kube import Kube

__all__ = ["register", "run"]

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
    adopt.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (or the reasons it is refused) and change nothing",
    )
    adopt.add_argument(
        "--undo",
        action="store_true",
        help="hand adopted operators back to OLM v0 (re-creates their Subscriptions)",
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

    try:
        kube = Kube(load_client(args.kubeconfig))
    except KubeConfigError as exc:
        error(str(exc))
        return int(ExitCode.FAILURE)
    try:
        if args.undo:
            return _undo(kube, args)
        return _adopt(kube, args)
    except KubeError as exc:
        error(f"the API server refused: {exc}")
        return int(ExitCode.FAILURE)


def _adopt(kube: Kube, args: argparse.Namespace) -> int:
    from pivoter.kube import NotFound
    from pivoter.olmv0 import handover, mapping, namespace_refusals, plan_for, refusals, survey

    namespace, name = _targets(args)
    try:
        found = survey(kube, namespace, name)
    except NotFound:
        error(f"Subscription {namespace}/{name} does not exist")
        return int(ExitCode.INVALID)
    reasons = [] if name else namespace_refusals(found)
    for installed in found.installed:
        existing = _existing(kube, mapping.resolution_name(namespace, installed.name))
        if existing is not None:
            continue  # already started: resume it below, whatever the survey says now
        reasons += refusals(installed)
    if reasons:
        for reason in reasons:
            error(f"refused: {reason}")
        return int(ExitCode.INVALID)
    plans = [plan_for(kube, installed) for installed in found.installed]
    if args.dry_run:
        emit({"dryRun": True, "adoptions": plans}, args.output, _human_plan)
        return int(ExitCode.OK)
    names = []
    for installed, plan in zip(found.installed, plans, strict=True):
        resolution = str(plan["resolution"]["metadata"]["name"])
        if _existing(kube, resolution) is None:
            handover.start(kube, installed, resolution)
        names.append(resolution)
    results = [_drive(kube, resolution, args.timeout) for resolution in names]
    emit({"adoptions": results}, args.output, _human_results)
    ok = all(r["step"] == handover.ADOPTED for r in results)
    return int(ExitCode.OK if ok else ExitCode.FAILURE)


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
    adopted = undo.adopted(kube, namespace, name)
    if not adopted:
        which = f"Subscription {namespace}/{name}" if name else f"namespace {namespace}"
        error(f"{which}: nothing adopted from OLM v0 (no Resolution records it)")
        return int(ExitCode.INVALID)
    if args.dry_run:
        emit(
            {"dryRun": True, "handBack": [undo.describe(r) for r in adopted]},
            args.output,
            lambda r: "\n".join(r["handBack"]),
        )
        return int(ExitCode.OK)
    results = [undo.hand_back(kube, r, timeout=args.timeout) for r in adopted]
    emit({"handBack": results}, args.output, lambda r: "\n".join(r["handBack"]))
    failed = [r for r in results if not r.startswith("handed back")]
    return int(ExitCode.FAILURE if failed else ExitCode.OK)


def _human_plan(result: dict[str, Any]) -> str:
    lines: list[str] = []
    for plan in result["adoptions"]:
        res = plan["resolution"]
        package = res["spec"]["packages"][0]
        lines.append(
            f"Subscription {plan['subscription']} (CSV {plan['csv']}, {plan['mode']}) -> "
            f"Resolution {res['metadata']['name']}"
        )
        lines.append(
            f"  package {package['name']} channel {package.get('channel', '(default)')}, pinned "
            f"to {package['versionRange']} while adopting; approval {res['spec']['approval']}; "
            f"config {package['config']}"
        )
        lines.append("  steps:")
        lines += [f"    {i}. {step}" for i, step in enumerate(plan["steps"], 1)]
        lines.append(f"  objects taken over in place ({len(plan['takenOver'])}):")
        lines += [f"    {o}" for o in plan["takenOver"]]
        if plan["released"]:
            lines.append("  OLM v0 objects removed (OLM's own records, not the operator's):")
            lines += [f"    {o}" for o in plan["released"]]
    return "\n".join(lines)


def _human_results(result: dict[str, Any]) -> str:
    return "\n".join(f"{r['resolution']}: {r['step']}: {r['message']}" for r in result["adoptions"])
