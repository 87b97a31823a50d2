"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pivoter.cli.exitcodes import EPILOG, ExitCode
from pivoter.cli.output import error

Subparsers = Any  # argparse's _SubParsersAction is private; this alias names what we pass around
Handler = Callable[[argparse.Namespace], int]


def add_command(subparsers: Subparsers, name: str, help_text: str) -> argparse.ArgumentParser:
    """Add a command parser that shares pivoter's help layout and exit-code epilog."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=help_text,
        description=help_text,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def unavailable(feature: str) -> Handler:
    """Return a handler for a command that this version does not build yet.

    It says so plainly and exits with ``ExitCode.UNAVAILABLE`` instead of pretending to work.
    """

    def handler(_: argparse.Namespace) -> int:
        error(f"{feature} is not available in this version of pivoter yet")
        return int(ExitCode.UNAVAILABLE)

    return handler
