"""Helpers shared by the command modules."""

from __future__ import annotations

import argparse
from typing import Any

from pivoter.cli.exitcodes import EPILOG

Subparsers = Any  # argparse's _SubParsersAction is private; this alias names what we pass around


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
