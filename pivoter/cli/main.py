"""Entry point of the ``pivoter`` command: builds the parser from the command surfaces and runs one.

Each module of :mod:`pivoter.cli.commands` exposes ``register(subparsers)``, which adds its
parser(s) and names each handler ``"module:function"``, a function ``(args) -> int``. Building the
parser imports no implementation: :func:`main` imports the one handler that runs, so ``pivoter
--help`` or ``pivoter version`` never load kubernetes or gRPC (``tests/unit/test_cli_imports.py``).
Adding a command is adding its surface to ``COMMANDS`` and its implementation under
:mod:`pivoter.cli`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from pivoter import __version__
from pivoter.cli.commands import adopt, catalog, inputs, resolve, run, version
from pivoter.cli.errors import load_handler, run_handler
from pivoter.cli.exitcodes import EPILOG, ExitCode
from pivoter.cli.flags import ArgumentParser, check_argv
from pivoter.cli.output import error, escape_what_cannot_be_encoded

COMMANDS = (run, resolve, catalog, inputs, adopt, version)


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


def handler_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every handler ``parser`` and its subcommands name (``--live``'s too), sorted."""
    names: set[str] = set()
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
            elif action.dest == "handler" and isinstance(action.const, str):  # --live
                names.add(action.const)
        default = current.get_default("handler")
        if isinstance(default, str):
            names.add(default)
    return sorted(names)


def import_handlers() -> None:
    """Import every command's implementation now.

    For a process that runs many commands in forked children (``tests/unit/cli_runner.py``), so
    that each child does not import them again; ``pivoter`` itself imports only the one it runs.
    """
    for name in handler_names(build_parser()):
        load_handler(name)


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
    escape_what_cannot_be_encoded()
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
