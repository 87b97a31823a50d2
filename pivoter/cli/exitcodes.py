"""Exit codes shared by every ``pivoter`` command (listed in ``pivoter --help``).

Every error is one line on stderr (``pivoter: error: ...``); only ``INTERNAL`` adds a traceback.
"""

import textwrap
from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit status of a ``pivoter`` command."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    INVALID = 3
    UNSATISFIABLE = 4
    INTERNAL = 70


MEANING: dict[ExitCode, str] = {
    ExitCode.OK: "the command did what was asked",
    ExitCode.FAILURE: (
        "something failed while running, or a file, directory, host or port named on the "
        "command line cannot be used (missing, unreadable, not text, in use); stderr says what"
    ),
    ExitCode.USAGE: (
        "the command line is wrong (unknown flag, missing argument, a malformed value: a port "
        "outside 0-65535, a duration not above 0, a bad URL or name)"
    ),
    ExitCode.INVALID: "the input was read but is not valid (e.g. a catalog failing validation)",
    ExitCode.UNSATISFIABLE: "a resolution has no answer; the explanation is on stderr",
    ExitCode.INTERNAL: "a bug in pivoter (the traceback follows on stderr); please report it",
}

EPILOG = "exit codes:\n" + "\n".join(
    textwrap.fill(
        MEANING[code], width=96, initial_indent=f"  {code.value:<3} ", subsequent_indent=" " * 6
    )
    for code in ExitCode
)
