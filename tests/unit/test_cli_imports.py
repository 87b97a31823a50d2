"""``pivoter`` starts light: building the parser imports no command's implementation.

The parser is the command surfaces of :mod:`pivoter.cli.commands` (flags, help texts, the name of
each handler); a handler and what it needs (kubernetes, gRPC, the resolver, the daemon) are
imported only when that command runs (:mod:`pivoter.cli.main`). Each check runs in a fresh
interpreter and reads its ``sys.modules``, so a heavy import added to a surface, to a converter of
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

from pivoter.cli.commands import catalog as catalog_surface
from pivoter.cli.commands import resolve as resolve_surface
from pivoter.cli.commands import run as run_surface
from pivoter.cli.errors import load_handler
from pivoter.cli.main import build_parser, handler_names

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
    "pivoter.resolutions",
    "pivoter.observability",
)
"""Packages no ``pivoter --help`` (nor ``version``) has any business importing."""

SURFACE = {
    "pivoter",
    "pivoter.cli",
    "pivoter.cli.commands",
    "pivoter.cli.errors",
    "pivoter.cli.exitcodes",
    "pivoter.cli.flags",
    "pivoter.cli.main",
    "pivoter.cli.output",
}
"""The pivoter modules that building the parser may import (besides the surfaces themselves)."""


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
    return sorted(m for m in modules if any(m == f or m.startswith(f"{f}.") for f in FORBIDDEN))


def test_building_the_parser_imports_only_the_surfaces() -> None:
    modules = _modules_after(
        """
        from pivoter.cli.main import build_parser
        build_parser()
        """
    )
    assert _heavy(modules) == []
    pivoter_modules = {m for m in modules if m == "pivoter" or m.startswith("pivoter.")}
    beyond = sorted(pivoter_modules - SURFACE - {m for m in modules if "cli.commands." in m})
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
    names = handler_names(build_parser())
    assert "pivoter.cli.catalog_live:run" in names  # catalog test --live
    assert len(names) == 16
    for name in names:
        assert callable(load_handler(name)), name


def test_the_surfaces_defaults_are_the_implementations() -> None:
    """The values the surfaces write out (to stay light) are the ones the code uses."""
    from pivoter import daemon, olmv1
    from pivoter.observability.logs import LEVELS
    from resolver import profiles
    from resolver.channeltest.render import DEFAULT_MAX_NODES

    assert resolve_surface.PROFILES == profiles.NAMES
    assert resolve_surface.DEFAULT_PROFILE == profiles.DEFAULT
    assert run_surface.DEFAULT_NAMESPACE == daemon.DEFAULT_NAMESPACE
    assert run_surface.DEFAULT_LEASE == daemon.DEFAULT_LEASE
    assert run_surface.DEFAULT_STORE == daemon.DEFAULT_STORE
    assert run_surface.DEFAULT_CATALOGD_ADDRESS == daemon.DEFAULT_CATALOGD_ADDRESS
    assert tuple(m.value for m in olmv1.Mode) == run_surface.OLMV1_MODES
    assert run_surface.LOG_LEVELS == LEVELS
    assert catalog_surface.DEFAULT_MAX_NODES == DEFAULT_MAX_NODES
