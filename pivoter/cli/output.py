"""Output conventions: human text by default, ``-o json`` / ``-o yaml`` for machines.

Every command that prints data takes ``-o`` (added by
:func:`pivoter.cli.commands._common.add_output_flag`); machine output goes to stdout and nothing
else is printed there, messages and progress go to stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO


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
        import yaml  # only -o yaml needs it: every command's start would pay for it otherwise

        out.write(yaml.safe_dump(data, sort_keys=True, default_flow_style=False))
    else:
        text = human(data)
        out.write(text if text.endswith("\n") or not text else text + "\n")


def escape_what_cannot_be_encoded() -> None:
    """Make stdout and stderr escape any character their encoding cannot hold.

    Commands print what catalogs hold (package, channel and bundle names, descriptions,
    messages), which is anyone's text. Where the standard streams' encoding cannot hold it
    (``PYTHONIOENCODING=ascii``, a C locale without Python's UTF-8 mode, a Latin-1 terminal),
    Python's default ``strict`` handler raises ``UnicodeEncodeError`` in the middle of the output.
    ``backslashreplace`` writes ``caf\\xe9`` instead: the output stays readable and complete,
    and no catalog can crash a command by its choice of letters.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and stream.errors != "backslashreplace":
            stream.flush()
            reconfigure(errors="backslashreplace")


def error(message: str) -> None:
    """Print an error message for a person on stderr."""
    sys.stderr.write(f"pivoter: error: {message}\n")
