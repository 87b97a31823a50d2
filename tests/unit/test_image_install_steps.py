"""The Dockerfile's install steps, run in a clean virtualenv (no image can be built here).

The machines reach package registries but no container registry, so the image itself cannot be
built (docs/controller.md). This test runs the same two steps as the Dockerfile: ``pip wheel``
of the repository (which generates the gRPC stubs at build time), then ``pip install`` of the
wheels alone into an empty virtualenv, and checks the installed daemon starts: the package
carries everything it needs at run time, and nothing from the test or dev extras.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _run(*argv: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900, check=False
    )
    assert result.returncode == 0, f"{argv}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result.stdout


@pytest.mark.timeout(600)  # pip builds and installs every wheel (each step bounded at 900 s)
def test_wheels_install_and_run_in_a_clean_virtualenv(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", wheels, REPO)
    assert any(w.name.startswith("pivoter-") for w in wheels.glob("*.whl"))
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "--no-index", *sorted(wheels.glob("*.whl")))
    # Run from outside the repository so the installed package, not the checkout, is imported.
    version = _run(env / "bin" / "pivoter", "--version", cwd=tmp_path)
    assert "pivoter" in version
    assert "--leader-elect" in _run(env / "bin" / "pivoter", "run", "--help", cwd=tmp_path)
    _run(
        python,
        "-c",
        "import resolver.catalog.registryapi.registry_pb2_grpc, pivoter.cli.run, "
        "provisioners.formats.registry_v1",
        cwd=tmp_path,
    )
    installed = _run(python, "-m", "pip", "list", "--format=freeze").lower()
    for extra in ("pytest", "ruff", "mypy", "playwright"):
        assert f"\n{extra}==" not in f"\n{installed}", f"{extra} ended up in the image"
