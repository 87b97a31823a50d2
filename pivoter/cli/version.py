"""``pivoter version``: which pivoter this is (version, commit and build date, from
:mod:`pivoter.buildinfo`) and the versions of the libraries it speaks through."""

from __future__ import annotations

import argparse

from pivoter.cli.commands._common import Subparsers, add_command, add_output_flag, set_handler
from pivoter.cli.exitcodes import ExitCode
from pivoter.cli.output import emit

__all__ = ["register", "run"]

_LIBRARIES = ("kubernetes", "grpcio", "protobuf", "python-sat", "semver", "PyYAML")


def register(subparsers: Subparsers) -> None:
    """Add the ``version`` command."""
    parser = add_command(subparsers, "version", "print the version of pivoter and its libraries")
    add_output_flag(parser)
    set_handler(parser, run)


def _library_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def run(args: argparse.Namespace) -> int:
    """Handle ``pivoter version``."""
    import platform  # like importlib.metadata, imported by this command only

    from pivoter.buildinfo import build_info

    build = build_info()
    info = {
        "pivoter": build.version,
        "commit": build.commit,
        "date": build.date,
        "python": platform.python_version(),
        "libraries": {name: _library_version(name) for name in _LIBRARIES},
    }

    def human(data: dict[str, object]) -> str:
        libs = info["libraries"]
        assert isinstance(libs, dict)
        lines = [f"pivoter {data['pivoter']} (python {data['python']})"]
        lines += [f"  commit {data['commit']}", f"  built {data['date']}"]
        lines += [f"  {name} {ver}" for name, ver in libs.items()]
        return "\n".join(lines)

    emit(info, args.output, human)
    return int(ExitCode.OK)
