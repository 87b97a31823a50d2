"""``pivoter version``: the version of pivoter and of the libraries it speaks through."""

from __future__ import annotations

import argparse
import platform
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

from pivoter import __version__
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit

_LIBRARIES = ("kubernetes", "grpcio", "protobuf", "python-sat", "semver", "PyYAML")


def _library_version(name: str) -> str:
    try:
        return dist_version(name)
    except PackageNotFoundError:
        return "not installed"


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter version``."""
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
