"""The import-layering contract is enforced by a tool, and the tool really catches violations."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    if not LINT_IMPORTS.exists():
        pytest.fail(f"lint-imports not installed next to {sys.executable}; run hack/bootstrap.sh")
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(cwd / "pyproject.toml"), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(cwd), "PATH": str(LINT_IMPORTS.parent)},
        check=False,
    )


def test_repository_keeps_its_layers() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("package", "bad_import", "contract"),
    [
        ("resolver", "import kubernetes", "resolver is a pure library"),
        ("resolver", "from pivoter import cli", "resolver is a pure library"),
        ("provisioners", "import pivoter.cli.main", "provisioners never import the daemon"),
        ("pivoter/runtime", "import pivoter.controllers.bundle", "pivoter's layers"),
        ("pivoter/kube", "import pivoter.runtime", "pivoter's layers"),
        (
            "pivoter/controllers",
            "from provisioners.apply.kubeapi import KubeAPI",
            "pivoter reaches the Kubernetes client",
        ),
    ],
)
def test_contract_catches_a_violation(
    tmp_path: Path, package: str, bad_import: str, contract: str
) -> None:
    for name in ("pivoter", "resolver", "provisioners"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / package / "_violation.py").write_text(
        textwrap.dedent(f'"""Deliberate layering violation for the test."""\n{bad_import}\n')
    )
    result = _lint_imports(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
    assert contract in result.stdout
    assert f"{package.replace('/', '.')}._violation" in result.stdout
