"""Entry point of the ``pivoter`` command: builds the parser from the command modules and runs one.

Each command is one module of :mod:`pivoter.cli` holding its flags and its handler (``catalog``
is a group of them, :mod:`pivoter.cli.catalog`): ``register(subparsers)`` adds its parser and sets
its handler, a function ``(args) -> int``. A command module imports only argparse, the converters
of :mod:`pivoter.cli.flags` and the light modules of :mod:`pivoter.cli`; its handler imports what
it needs (kubernetes, gRPC, the resolver) when it runs, so ``pivoter --help`` or ``pivoter
version`` never load them (``tests/unit/test_cli_imports.py``). Adding a command is adding its
module to ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from pivoter import __version__
from pivoter.cli import (
    adopt,
    approve,
    catalog,
    check,
    history,
    install,
    plan,
    resolve,
    rollback,
    run,
    uninstall,
    unpin,
    version,
)
from pivoter.cli.errors import Handler, run_handler
from pivoter.cli.exitcodes import EPILOG, ExitCode
from pivoter.cli.flags import ArgumentParser, check_argv
from pivoter.cli.output import error, escape_what_cannot_be_encoded

COMMANDS = (
    run,
    resolve,
    catalog,
    history,
    rollback,
    unpin,
    plan,
    approve,
    adopt,
    install,
    check,
    uninstall,
    version,
)
"""The command modules, in the order ``pivoter --help`` lists them."""


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


def handlers(parser: argparse.ArgumentParser) -> list[Handler]:
    """Every handler of ``parser`` and its subcommands (``--live``'s too)."""
    found: list[Handler] = []
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
            elif action.dest == "handler" and action.const is not None:  # --live
                found.append(action.const)
        default = current.get_default("handler")
        if default is not None:
            found.append(default)
    return list(dict.fromkeys(found))


def import_handlers() -> None:
    """Import now what every command imports when it runs.

    For a process that runs many commands in forked children (``tests/clirun.py``), so that each
    child does not import them again; ``pivoter`` itself imports only what the command it runs
    needs. A handler's module is read for the imports it makes (most of them inside its
    functions, made when the command runs), and those are made.
    """
    for handler in handlers(build_parser()):
        source = Path(sys.modules[handler.__module__].__file__ or "").read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                __import__(node.module, fromlist=[alias.name for alias in node.names])


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
