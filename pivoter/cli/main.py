"""Entry point of the ``pivoter`` command: builds the parser from the command modules and runs one.

Each command module exposes ``register(subparsers)``, which adds its parser and sets ``handler``
to a function ``(args) -> int``. Adding a command is adding a module to ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import logging
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
from pivoter.cli.errors import run_handler
from pivoter.cli.exitcodes import EPILOG, ExitCode
from pivoter.cli.flags import ArgumentParser, check_argv
from pivoter.cli.output import error

COMMANDS = (run, resolve, catalog, history, rollback, unpin, plan, approve, version)


def build_parser() -> argparse.ArgumentParser:
    """Return the full ``pivoter`` argument parser."""
    parser = ArgumentParser(
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
    """Run the command line and return its exit code.

    Every mistake is one line on stderr with a documented exit code (``pivoter --help``): bad
    values are refused by the typed converters of :mod:`pivoter.cli.flags` while parsing, and
    the failures a command can meet at run time by :func:`pivoter.cli.errors.run_handler`.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if sys.stderr is None:  # started with stderr closed: nowhere to say anything
        return int(ExitCode.FAILURE)
    if sys.stdout is None:
        error("standard output is closed")
        return int(ExitCode.FAILURE)
    problem = check_argv(arguments)
    if problem is not None:
        error(problem)
        return int(ExitCode.USAGE)
    parser = build_parser()
    args = parser.parse_args(arguments)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return int(ExitCode.USAGE)
    if args.command != "run":
        # One-shot commands report a failed request in one line; urllib3's retry warnings
        # would add lines of noise before it (the daemon keeps them in its logs).
        logging.getLogger("urllib3").setLevel(logging.ERROR)
    return run_handler(handler, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
