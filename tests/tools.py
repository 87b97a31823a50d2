"""Where the tests find external tools installed by ``hack/tools.sh`` (opm, the control plane, ...).

A missing tool fails the test with the command that installs it; tests never skip silently
because a tool is absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

TOOLS_DIR = Path(
    os.environ.get(
        "PIVOTER_TOOLS_DIR",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pivoter" / "bin",
    )
)
SHARED = Path(__file__).resolve().parents[2] / "shared"


def tool(name: str) -> Path:
    """Return the path of an installed tool, or fail the test saying how to install it."""
    candidate = TOOLS_DIR / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    pytest.fail(f"{name} is not installed; run: hack/tools.sh {name}")
