"""``pivoter version``: the version of pivoter and of the libraries it speaks through."""

from __future__ import annotations

import argparse
import platform
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

from pivoter import __version__
from pivoter.cli._common import Subparsers, add_command
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import add_output_flag, emit

_LIBRARIES = ("kubernetes", "grpcio", "protobuf", "python-sat", "semver", "PyYAML")


def register(subparsers: Subparsers) -> None:
    """Add the ``version`` command."""
    parser = add_command(subparsers, "version", "print the version of pivoter and its libraries")
    add_output_flag(parser)
    parser.set_defaults(handler=_run)


def _library_version(name: str) -> str:
    try:
        return dist_version(name)
    except PackageNotFoundError:
        return "not installed"


def _run(args: argparse.Namespace) -> int:
    info = {
        "pivoter": __version__,
        "python": platform.python_version(),
        "libraries": {name: _library_version(name) for name in _LIBRARIES},
    }

    def human(data: dict[str, object]) -> str:
        libs = info["libraries"]
        assert isinstance(libs, dict)
        lines = [f"pivoter {data['pivoter']} (python {data['python']})"]
        lines += [f"  {name} {ver}" for name, ver in libs.items()]
        return "\n".join(lines)

    emit(info, args.output, human)
    return int(ExitCode.OK)
