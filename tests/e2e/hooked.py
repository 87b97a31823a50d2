"""``pivoter run`` with the tests' fault hooks: the entry point of the tests that stop a daemon
process at a chosen step.

Run as ``python -m tests.e2e.hooked run ...`` with the arguments of ``pivoter run``
(:class:`tests.e2e.daemon.Daemon` does with ``hooked=True``). Everything is the real ``pivoter
run`` (:func:`pivoter.cli.run.run`), given :class:`pivoter.daemon.hooks.Hooks` made from these
environment variables, which are read here and nowhere else:

- ``PIVOTER_TEST_PAUSE_PIVOT_AT=<phase>`` (:data:`PAUSE_PIVOT_AT`): every pivot blocks for good
  right after it entered (and persisted) that phase (docs/pivot.md), for a test to SIGKILL the
  daemon there;
- ``PIVOTER_TEST_HOLD_FILE=<path>`` (:data:`HOLD_FILE`): a pivot entering the phase the file
  names waits while the file exists and goes on once the test deletes it (the control-plane
  tests);
- ``PIVOTER_TEST_PAUSE_ADOPTION_AT=<step>`` (:data:`PAUSE_ADOPTION_AT`): an OLM v0 adoption
  blocks for good right after it recorded that step.

The variables are read by this test-only entry point rather than by ``pivoter run`` so that the
shipped daemon has no switch that freezes its pivots: a stray variable in a Pod's environment
does nothing, and the product takes its hooks from its caller only.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pivoter.cli.errors import run_handler
from pivoter.cli.main import build_parser
from pivoter.cli.run import run
from pivoter.daemon.hooks import AdoptionStepHook, Hooks, PivotHook
from pivoter.pivot import PivotRecord

__all__ = ["HOLD_FILE", "PAUSE_ADOPTION_AT", "PAUSE_PIVOT_AT", "hooks_from", "main"]

PAUSE_PIVOT_AT = "PIVOTER_TEST_PAUSE_PIVOT_AT"
HOLD_FILE = "PIVOTER_TEST_HOLD_FILE"
PAUSE_ADOPTION_AT = "PIVOTER_TEST_PAUSE_ADOPTION_AT"

log = logging.getLogger("pivoter.test.hooks")


def _pause_at(phase: str) -> PivotHook:
    """Block a pivot for good right after it entered ``phase``."""

    def hook(record: PivotRecord) -> None:
        if record.phase.value == phase:
            log.warning(
                "%s=%s: pausing the pivot to revision %d", PAUSE_PIVOT_AT, phase, record.revision
            )
            threading.Event().wait()

    return hook


def _hold_while(hold: Path) -> PivotHook:
    """Hold a pivot that entered the phase ``hold`` names until the file is deleted."""

    def hook(record: PivotRecord) -> None:
        entered = record.phase.value
        try:
            held = hold.read_text().strip()
        except FileNotFoundError:
            return
        if held != entered:
            return
        log.warning(
            "holding the pivot to revision %d in %s while %s exists", record.revision, entered, hold
        )
        while hold.exists():
            time.sleep(0.1)
        log.warning("released the pivot to revision %d in %s", record.revision, entered)

    return hook


def _pause_adoption_at(step: str) -> AdoptionStepHook:
    """Block an adoption for good right after it recorded ``step``."""

    def hook(recorded: str) -> None:
        if recorded == step:
            log.warning("%s=%s: holding the adoption", PAUSE_ADOPTION_AT, step)
            threading.Event().wait()

    return hook


def hooks_from(environ: Mapping[str, str]) -> Hooks:
    """The hooks the variables of ``environ`` ask for (none set: no hooks)."""
    pivot: PivotHook | None = None
    if environ.get(HOLD_FILE):
        pivot = _hold_while(Path(environ[HOLD_FILE]))
    elif environ.get(PAUSE_PIVOT_AT):
        pivot = _pause_at(environ[PAUSE_PIVOT_AT])
    step = environ.get(PAUSE_ADOPTION_AT)
    return Hooks(pivot_transition=pivot, adoption_step=_pause_adoption_at(step) if step else None)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``pivoter run ...`` and run it with the hooks of the environment."""
    args = build_parser().parse_args(argv)
    if getattr(args, "command", None) != "run":
        raise SystemExit("tests.e2e.hooked runs `pivoter run` only")
    return run_handler(functools.partial(run, hooks=hooks_from(os.environ)), args)


if __name__ == "__main__":
    sys.exit(main())
