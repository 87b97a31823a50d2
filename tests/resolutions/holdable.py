"""``pivoter run`` with a pause a test can release: the launcher of the control-plane fault tests.

``pivoter run`` has the test hook ``PIVOTER_TEST_PAUSE_PIVOT_AT=<phase>``, which blocks every
pivot in that phase for good (the kill tests SIGKILL the daemon there). The control-plane tests
need the pivot to go on, with the API server gone, once it was held in a known phase. Run as
``python -m tests.resolutions.holdable run ...`` (the same arguments as ``pivoter run``), this
module replaces the hook with one that holds a pivot entering a phase only while the file named
by ``PIVOTER_TEST_HOLD_FILE`` exists and names that phase, and carries on once the test deletes
the file (``PIVOTER_TEST_PAUSE_PIVOT_AT`` must still be set, to anything: it makes ``pivoter run``
install the hook). Everything else is the real ``pivoter run``. Used by :class:`HoldableDaemon` in
``tests/resolutions/test_controlplane_cluster.py``.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pivoter import daemon
from pivoter.cli import main as cli
from pivoter.pivot import PivotRecord

HOLD_FILE_ENV = "PIVOTER_TEST_HOLD_FILE"

log = logging.getLogger("pivoter.test.hold")


def _held_phase(hold: Path) -> str:
    try:
        return hold.read_text().strip()
    except FileNotFoundError:
        return ""


def _hold_hook(phase: str) -> Callable[[PivotRecord], None]:
    """Hold a pivot that entered the phase the hold file names until the file is deleted
    (``phase``, the value of ``PIVOTER_TEST_PAUSE_PIVOT_AT``, only switches the hook on)."""
    del phase
    hold = Path(os.environ[HOLD_FILE_ENV])

    def hook(record: PivotRecord) -> None:
        entered = record.phase.value
        if _held_phase(hold) != entered:
            return
        log.warning(
            "holding the pivot to revision %d in %s while %s exists", record.revision, entered, hold
        )
        while hold.exists():
            time.sleep(0.1)
        log.warning("released the pivot to revision %d in %s", record.revision, entered)

    return hook


if __name__ == "__main__":
    daemon._pause_hook = _hold_hook  # test-only substitution of the hook `pivoter run` installs
    sys.exit(cli.main())
