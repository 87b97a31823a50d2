"""Run conformance cases and compare each outcome with its expectation.

Each case runs under the profile its ``engine`` names, at its ``level`` (solver, resolver,
channel_order, successors). A case listed in ``deviations.yaml`` is reported with its reason
instead of failing; a malformed case (a field missing that nothing implies, see
:mod:`resolver.conformance.cases`) is one ``ERROR`` line naming the case and the field, and counts
as failed. Prints one line per case and ends with ``N passed, M failed``. Used by
``python -m resolver.conformance`` and by the test suite.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from resolver import profiles
from resolver.conformance import cases
from resolver.profiles import olmv1_filter
from resolver.rules.channels import ChannelError, sort_channel
from resolver.rules.inputs import Choice, ResolutionError, Unsatisfiable
from resolver.sat import NotSatisfiable, ProblemError

DEVIATIONS = Path(__file__).with_name("deviations.yaml")


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """What running one case produced."""

    outcome: str
    selected: tuple[str, ...] = ()
    choices: tuple[Choice, ...] = ()
    error: str = ""
    replaces: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class CaseVerdict:
    """The comparison of one case's outcome with its expectation."""

    id: str
    status: str  # "pass", "fail", "error" (a malformed case) or "deviation"
    detail: str = ""

    def line(self) -> str:
        """One line of the runner's output."""
        tail = f": {self.detail}" if self.detail else ""
        return f"{self.status.upper():9} {self.id}{tail}"


def load_deviations(path: Path = DEVIATIONS) -> dict[str, str]:
    """Read the id -> reason map of deliberate deviations."""
    data = yaml.safe_load(path.read_text()) or {}
    return {str(k): str(v) for k, v in data.items()}


def run_case(case: Mapping[str, Any], index: int = 0) -> CaseOutcome:
    """Run one case under its engine's profile (raises :class:`cases.CaseError` when it is
    malformed)."""
    top = cases.validate(case, index)
    engine = top.text("engine")
    level = top.text("level")
    separator = profiles.SEPARATORS.get(engine, ", ")
    try:
        if level == "solver":
            selected = profiles.solve_variables(cases.variables(case, index))
            return CaseOutcome("ok", tuple(sorted(selected)))
        if level == "channel_order":
            package, channel, entries = cases.channel_entries(case, index)
            return CaseOutcome("ok", tuple(sort_channel(package, channel, entries)))
        if level == "successors":
            return CaseOutcome(
                "ok", tuple(olmv1_filter.successors(cases.successors_input(case, index)))
            )
        inp = cases.resolution_input(case, index)
        result = profiles.get(engine)(inp)
    except NotSatisfiable as err:
        return CaseOutcome("unsat", error=err.message(separator))
    except Unsatisfiable as err:
        return CaseOutcome("unsat", error=err.text(separator))
    except (ResolutionError, ChannelError, ProblemError) as err:
        return CaseOutcome("error", error=str(err))
    choices = tuple(result.choices)
    return CaseOutcome(
        "ok",
        tuple(c.bundle.name for c in choices),
        choices,
        replaces={c.bundle.name: c.replaces for c in choices if c.replaces},
    )


_QUALIFIED = re.compile(
    r"^(?P<name>.+?)(?:@(?P<catalog>[^@ ]+))?(?: \(channel (?P<channel>.+)\))?$"
)


def _match_selected(expected: Sequence[str], got: CaseOutcome) -> str:
    if not got.choices:
        want = sorted(expected)
        have = sorted(got.selected)
        return "" if want == have else f"selected {have}, expected {want}"
    remaining = list(got.choices)
    for text in expected:
        m = _QUALIFIED.match(text)
        assert m is not None
        hit = next(
            (
                c
                for c in remaining
                if c.bundle.name == m["name"]
                and (not m["catalog"] or c.catalog == m["catalog"])
                and (not m["channel"] or c.channel == m["channel"])
            ),
            None,
        )
        if hit is None:
            return f"expected {text!r} not selected; selected {_show(got.choices)}"
        remaining.remove(hit)
    if remaining:
        return f"unexpected selections {_show(remaining)}"
    return ""


def _show(choices: Sequence[Choice]) -> list[str]:
    return [f"{c.bundle.name}@{c.catalog} (channel {c.channel})" for c in choices]


def judge(case: Mapping[str, Any], got: CaseOutcome) -> str:
    """Return "" when ``got`` meets the case's expectation, else what differs."""
    expect: Mapping[str, Any] = case["expect"]  # checked by cases.validate
    if got.outcome != expect["outcome"]:
        extra = f" ({got.error})" if got.error else f" (selected {list(got.selected)})"
        return f"outcome {got.outcome}, expected {expect['outcome']}{extra}"
    if got.outcome == "ok":
        level = case["level"]
        if level == "channel_order":
            if list(got.selected) != list(expect.get("order", [])):
                return f"order {list(got.selected)}, expected {expect.get('order')}"
            return ""
        if level == "successors":
            want = sorted(expect.get("allowed", []))
            return "" if list(got.selected) == want else f"allowed {got.selected}, expected {want}"
        problem = _match_selected(list(expect.get("selected", [])), got)
        if problem:
            return problem
        if "replaces" in expect and dict(got.replaces or {}) != dict(expect["replaces"]):
            return f"replaces {dict(got.replaces or {})}, expected {dict(expect['replaces'])}"
        return ""
    if "error_exact" in expect and got.error != expect["error_exact"]:
        return f"error {got.error!r}, expected exactly {expect['error_exact']!r}"
    missing = [s for s in expect.get("error_contains", []) or [] if s not in got.error]
    if missing:
        return f"error {got.error!r} lacks {missing!r}"
    return ""


def run_file(path: Path, deviations: Mapping[str, str]) -> list[CaseVerdict]:
    """Run every case of one file (a malformed case is an ``error`` verdict naming the field;
    a file that is not a case file raises :class:`CaseFileError`)."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as err:
        raise CaseFileError(f"{path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise CaseFileError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
        raise CaseFileError(f"{path}: not a conformance case file (no list of cases)")
    verdicts = []
    for index, case in enumerate(data["cases"]):
        cid = cases.case_id(case, index)
        try:
            problem = judge(case, run_case(case, index))
        except cases.CaseError as err:
            verdicts.append(CaseVerdict(cid, "error", f"malformed case: {err}"))
            continue
        except Exception as err:
            problem = f"crashed: {type(err).__name__}: {err}"
        if cid in deviations:
            note = deviations[cid] + ("" if problem else " (now passes: remove the deviation)")
            verdicts.append(CaseVerdict(cid, "deviation", note))
        else:
            verdicts.append(CaseVerdict(cid, "fail" if problem else "pass", problem))
    return verdicts


class CaseFileError(Exception):
    """A file given to the runner that cannot be read as a list of cases."""


DEFAULT_FILES = (
    Path(__file__).resolve().parents[2] / "tests" / "data" / "conformance" / "resolver-cases.yaml",
    Path(__file__).resolve().parents[2] / "tests" / "data" / "conformance" / "pivoter-cases.yaml",
)
"""The files run when none is named: the shared corpus's copy and pivoter's own cases (in a
checkout)."""


def main(argv: Sequence[str]) -> int:
    """Entry point: run the files, print one line per case and the totals.

    Exit 0 when every case passes or is a listed deviation, 1 when one fails or is malformed,
    2 when a file cannot be read.
    """
    parser = argparse.ArgumentParser(prog="python -m resolver.conformance")
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="case files (default: tests/data/conformance/*-cases.yaml of the checkout)",
    )
    parser.add_argument("--deviations", type=Path, default=DEVIATIONS)
    args = parser.parse_args(argv)
    files = list(args.files) or [f for f in DEFAULT_FILES if f.is_file()]
    if not files:
        parser.error("no case files given and none found in tests/data/conformance/")
    deviations = load_deviations(args.deviations)
    verdicts = []
    try:
        for f in files:
            verdicts += run_file(f, deviations)
    except CaseFileError as err:
        print(f"python -m resolver.conformance: {err}", file=sys.stderr)
        return 2
    for v in verdicts:
        print(v.line())
    passed = sum(v.status == "pass" for v in verdicts)
    failed = sum(v.status in ("fail", "error") for v in verdicts)
    listed = sum(v.status == "deviation" for v in verdicts)
    if listed:
        print(f"{listed} deliberate deviations (reasons above, from {args.deviations.name})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
