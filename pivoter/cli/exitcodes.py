"""Exit codes shared by every ``pivoter`` command (listed in ``pivoter --help``)."""

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit status of a ``pivoter`` command."""

    OK = 0
    FAILURE = 1
    USAGE = 2
    INVALID = 3
    UNSATISFIABLE = 4
    UNAVAILABLE = 5


MEANING: dict[ExitCode, str] = {
    ExitCode.OK: "the command did what was asked",
    ExitCode.FAILURE: "something failed while running (I/O, network, cluster); stderr says what",
    ExitCode.USAGE: "the command line is wrong (unknown flag, missing argument)",
    ExitCode.INVALID: "the input was read but is not valid (e.g. a catalog failing validation)",
    ExitCode.UNSATISFIABLE: "a resolution has no answer; the explanation is on stderr",
    ExitCode.UNAVAILABLE: "the command is not built in this version of pivoter yet",
}

EPILOG = "exit codes:\n" + "\n".join(f"  {code.value}  {MEANING[code]}" for code in ExitCode)
