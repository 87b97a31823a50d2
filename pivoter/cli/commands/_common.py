"""What the command surfaces share: a command's parser, the ``-o`` flag, the handler's name."""

from __future__ import annotations

import argparse
from typing import Any

from pivoter.cli.exitcodes import EPILOG

Subparsers = Any  # argparse's _SubParsersAction is private; this alias names what we pass around

OUTPUT_FORMATS = ("human", "json", "yaml")


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


def set_handler(parser: argparse.ArgumentParser, target: str) -> None:
    """Name the function that runs the command, as ``"package.module:function"`` taking the
    parsed arguments and returning the exit code; it is imported only when the command runs."""
    parser.set_defaults(handler=target)


def add_output_flag(parser: argparse.ArgumentParser, extra: tuple[str, ...] = ()) -> None:
    """Add the ``-o/--output`` flag every data-printing command shares (``extra``: formats
    of this command only)."""
    parser.add_argument(
        "-o",
        "--output",
        choices=OUTPUT_FORMATS + extra,
        default="human",
        help="output format (default: human-readable text)",
    )
