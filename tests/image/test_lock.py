"""The image's lock files stay in step with pyproject.toml (pure: no network, no podman).

``requirements.lock`` (the daemon's dependency closure) and ``requirements-build.lock`` (what
builds the wheel) are written by ``hack/image/lock.sh``; the Dockerfile installs exactly them with
``pip --require-hashes --no-deps``. A dependency changed in pyproject.toml without a new lock fails
here with the command that fixes it.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

from tests.image.images import REPO, canonical, locked

LOCKS = {"runtime": REPO / "requirements.lock", "build": REPO / "requirements-build.lock"}
FIX = "pyproject.toml changed without a new lock: run hack/image/lock.sh and commit both lock files"


def _lockdigest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lockdigest", REPO / "hack/image/lockdigest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("lockdigest", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", sorted(LOCKS))
def test_the_lock_was_made_from_the_current_pyproject(kind: str) -> None:
    first = LOCKS[kind].read_text().splitlines()[0]
    assert first == f"# pyproject.toml {kind} digest: {_lockdigest().digest(kind)}", FIX


@pytest.mark.parametrize("kind", sorted(LOCKS))
def test_every_requirement_is_pinned_at_a_version_it_allows(kind: str) -> None:
    pins = locked(LOCKS[kind])
    for text in _lockdigest().requirements(kind):
        requirement = Requirement(text)
        name = canonical(requirement.name)
        assert name in pins, f"{requirement.name} is not in {LOCKS[kind].name}; {FIX}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{LOCKS[kind].name} pins {name}=={pins[name]}, outside {requirement}; {FIX}"
        )


@pytest.mark.parametrize("kind", sorted(LOCKS))
def test_every_pin_carries_hashes(kind: str) -> None:
    """pip --require-hashes refuses a lock with a pin without a hash; check it before a build."""
    entries = re.split(r"\n(?=[A-Za-z0-9])", LOCKS[kind].read_text())
    pinned = [entry for entry in entries if "==" in entry.split("\n", 1)[0]]
    assert len(pinned) == len(locked(LOCKS[kind])) > 0
    for entry in pinned:
        assert "--hash=sha256:" in entry, entry.split("\n", 1)[0]


def test_the_digest_notices_a_changed_dependency(tmp_path: Path) -> None:
    """The tripwire works: one changed requirement changes the digest, reordering does not."""
    module = _lockdigest()
    original = (REPO / "pyproject.toml").read_text()
    deps = module.requirements("runtime")
    changed = tmp_path / "pyproject.toml"
    changed.write_text(original.replace(f'"{deps[0]}"', f'"{deps[0]}.post1"', 1))
    assert module.digest("runtime", changed) != module.digest("runtime")
    reordered = tmp_path / "reordered.toml"
    reordered.write_text(
        original.replace(f'"{deps[0]}",', "", 1).replace(
            f'"{deps[-1]}",', f'"{deps[-1]}",\n  "{deps[0]}",', 1
        )
    )
    assert module.requirements("runtime", reordered) != deps
    assert module.digest("runtime", reordered) == module.digest("runtime")
