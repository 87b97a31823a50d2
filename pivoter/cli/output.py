"""Output conventions: human text by default, ``-o json`` / ``-o yaml`` for machines.

Every command that prints data takes ``-o``; machine output goes to stdout and nothing else is
printed there, messages and progress go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

import yaml

FORMATS = ("human", "json", "yaml")


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    """Add the ``-o/--output`` flag every data-printing command shares."""
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="human",
        help="output format (default: human-readable text)",
    )


def emit(
    data: Any,
    fmt: str,
    human: Callable[[Any], str],
    stream: TextIO | None = None,
) -> None:
    """Write ``data`` to ``stream`` in ``fmt``; ``human`` renders the default text form."""
    out = stream or sys.stdout
    if fmt == "json":
        out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif fmt == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=True, default_flow_style=False))
    else:
        text = human(data)
        out.write(text if text.endswith("\n") or not text else text + "\n")


def error(message: str) -> None:
    """Print an error message for a person on stderr."""
    sys.stderr.write(f"pivoter: error: {message}\n")
