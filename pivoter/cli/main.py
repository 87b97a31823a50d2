"""Entry point of the ``pivoter`` command: builds the parser from the command modules and runs one.

Each command module exposes ``register(subparsers)``, which adds its parser and sets ``handler``
to a function ``(args) -> int``. Adding a command is adding a module to ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pivoter import __version__
from pivoter.cli import (
    approve,
    catalog,
    history,
    plan,
    resolve,
    rollback,
    run,
    unpin,
    version,
)
from pivoter.cli.exitcodes import EPILOG, ExitCode
from pivoter.cli.output import error

COMMANDS = (run, resolve, catalog, history, rollback, unpin, plan, approve, version)


def build_parser() -> argparse.ArgumentParser:
    """Return the full ``pivoter`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="pivoter",
        description=(
            "Keep what is installed on a Kubernetes cluster in step with what package catalogs "
            "offer: resolve bundles from file-based catalogs, record each selection as a "
            "ResolveSet and install it as one grouped pivot."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pivoter {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        return int(ExitCode.OK)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
