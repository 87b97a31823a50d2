"""``pivoter`` starts light: building the parser imports no command's implementation.

The parser is the command modules of :mod:`pivoter.cli` (each command's flags, help texts and
handler, :mod:`pivoter.cli.main`); what a handler needs (kubernetes, gRPC, the resolver, the
daemon) is imported only when that command runs. Each check runs in a fresh interpreter and reads
its ``sys.modules``, so a heavy import added to the top of a command module, to a converter of
:mod:`pivoter.cli.flags` or to what :mod:`pivoter.cli.main` imports fails here. The start-up times
this buys are in docs/benchmarks/cli.md (``bench/cli_startup.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pivoter.cli import catalog_graph, catalog_live, resolve
from pivoter.cli import run as run_surface
from pivoter.cli.main import build_parser, handlers

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "tests" / "data" / "wire" / "crafted"

FORBIDDEN = (
    "kubernetes",
    "grpc",
    "google.protobuf",
    "urllib3",
    "pysat",
    "yaml",
    "provisioners",
    "resolver",
    "pivoter.kube",
    "pivoter.platformoperators",
    "pivoter.daemon",
    "pivoter.catalogserver",
    "pivoter.inputs",
    "pivoter.observability",
)
"""Packages no ``pivoter --help`` (nor ``version``) has any business importing."""

LIGHT = {"pivoter.daemon", "pivoter.daemon.settings"}
"""The daemon's settings and defaults, which ``pivoter run --help`` shows: the standard library
only."""

SURFACE = {
    "pivoter",
    "pivoter._version",  # generated at build by setuptools-scm: the version string only
    "pivoter.cli",
    "pivoter.cli.commands",
    "pivoter.cli.errors",
    "pivoter.cli.exitcodes",
    "pivoter.cli.flags",
    "pivoter.cli.main",
    "pivoter.cli.output",
    *LIGHT,
}
"""The pivoter modules that building the parser may import (besides the command modules)."""

COMMAND_MODULES = {
    *(
        f"pivoter.cli.{name}"
        for name in (
            "adopt",
            "approve",
            "catalog",
            "catalog_diff",
            "catalog_graph",
            "catalog_live",
            "catalog_render",
            "catalog_serve",
            "catalog_test",
            "catalog_validate",
            "check",
            "history",
            "install",
            "plan",
            "resolve",
            "rollback",
            "uninstall",
            "unpin",
            "version",
        )
    ),
    "pivoter.cli.commands._common",
    "pivoter.cli.run",
}
"""Each command's module (flags and handler) and what they share."""


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{textwrap.dedent(code)}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> list[str]:
    return sorted(
        m for m in modules - LIGHT if any(m == f or m.startswith(f"{f}.") for f in FORBIDDEN)
    )


def test_building_the_parser_imports_only_the_surfaces() -> None:
    modules = _modules_after(
        """
        from pivoter.cli.main import build_parser
        build_parser()
        """
    )
    assert _heavy(modules) == []
    pivoter_modules = {m for m in modules if m == "pivoter" or m.startswith("pivoter.")}
    beyond = sorted(pivoter_modules - SURFACE - COMMAND_MODULES)
    assert beyond == [], "the parser imports implementation modules"


@pytest.mark.parametrize(
    "argv",
    [
        ["version"],
        ["version", "-o", "json"],
        ["--help"],
        ["--version"],
        ["run", "--help"],
        ["resolve", "--help"],
        ["catalog", "validate", "--help"],
        ["catalog", "test", "--help"],
    ],
)
def test_a_light_command_line_imports_nothing_heavy(argv: list[str]) -> None:
    modules = _modules_after(
        f"""
        import contextlib, io
        from pivoter.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main({argv!r})
            except SystemExit:
                pass
        """
    )
    assert _heavy(modules) == []


def test_catalog_validate_needs_neither_kubernetes_nor_grpc() -> None:
    modules = _modules_after(
        f"""
        import contextlib, io
        from pivoter.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["catalog", "validate", "--no-cache", {str(CATALOG)!r}]) == 0
        """
    )
    assert "pivoter.cli.catalog_validate" in modules
    assert [m for m in _heavy(modules) if not m.startswith(("resolver", "yaml"))] == []


def test_every_handler_is_named_and_importable() -> None:
    found = handlers(build_parser())
    assert catalog_live.run in found  # catalog test --live
    assert len(found) == 19
    for handler in found:
        assert callable(handler), handler


def test_importing_the_handlers_imports_what_they_run_with() -> None:
    """What the fork server of the CLI tests (``tests/clirun.py``) relies on: after
    ``import_handlers()``, a command's child process imports nothing heavy of its own."""
    modules = _modules_after(
        """
        from pivoter.cli.main import import_handlers
        import_handlers()
        """
    )
    for name in (
        "kubernetes",
        "grpc",
        "yaml",
        "pivoter.olmv0",
        "pivoter.catalogserver.serve",
        "pivoter.cli._inputs",
        "pivoter.cli.catalog_changes",
        "pivoter.cli.run",
        "resolver.profiles",
        "resolver.channeltest.report",
        "resolver.channeltest.ci.sarif",
    ):
        assert name in modules, name


def test_the_surfaces_defaults_are_the_implementations() -> None:
    """The values the surfaces write out (to stay light) are the ones the code uses (the run
    command's defaults are the daemon's own, :mod:`pivoter.daemon.settings`)."""
    from pivoter import olmv1
    from pivoter.observability.logs import LEVELS
    from resolver import profiles
    from resolver.channeltest.render import DEFAULT_MAX_NODES

    assert resolve.PROFILES == profiles.NAMES
    assert resolve.DEFAULT_PROFILE == profiles.DEFAULT
    assert tuple(m.value for m in olmv1.Mode) == run_surface.OLMV1_MODES
    assert run_surface.LOG_LEVELS == LEVELS
    assert catalog_graph.DEFAULT_MAX_NODES == DEFAULT_MAX_NODES
