"""Where the tests find external tools installed by ``hack/tools.sh`` (opm, the control plane, ...).

A missing tool fails the test with the command that installs it; tests never skip silently
because a tool is absent. A test that asks for a tool must carry the ``tools`` marker (added
automatically by tests/conftest.py to ``cluster`` and ``opm`` tests and to tests using one of
:data:`TOOL_FIXTURES`), so that ``pytest -m "not cluster and not tools"`` runs without any of
them: :func:`tool` fails a test that is not marked. (Product code that runs ``git``, ``dot`` or
``helm`` itself cannot be watched this way; its tests carry the marker explicitly.)
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
# The real catalogs, bundles and conformance cases beside the checkout (read-only; CI has them).
# PIVOTER_SHARED points elsewhere (a path that does not exist: as a plain clone sees it).
SHARED = Path(os.environ.get("PIVOTER_SHARED") or Path(__file__).resolve().parents[2] / "shared")
HAVE_SHARED = SHARED.is_dir()
# For tests and benchmarks that need the full sets, not the subsets in tests/data/.
requires_shared = pytest.mark.skipif(
    not HAVE_SHARED,
    reason=f"needs the full catalogs and bundles of ../shared beside the checkout ({SHARED})",
)
# Fixtures (in any conftest or module) that run an external tool: a test reaching one is `tools`.
TOOL_FIXTURES = frozenset(
    {
        "registry",  # distribution's registry
        "private_registry",  # ... with htpasswd
        "tls_registry",
        "token_registry",
        "opm_server",  # opm serve
        "git_http",  # git http-backend
        "git_https_private",
        "sshd",  # sshd with git
    }
)

_running: list[pytest.Item] = []


def set_running(item: pytest.Item | None) -> None:
    """Record the test being run (None: none), for the ``tools`` marker check of :func:`tool`."""
    _running[:] = [] if item is None else [item]


def tool(name: str, installer: str | None = None) -> Path:
    """Return the path of an installed tool, or fail the test saying how to install it
    (``hack/tools.sh INSTALLER``, the tool's own name by default).

    Fails a running test that is not marked ``tools``: the pure set must not need the tool.
    """
    for item in _running:
        if item.get_closest_marker("tools") is None:
            pytest.fail(
                f"{item.nodeid} uses the external tool {name} but is not marked 'tools': "
                "add @pytest.mark.tools (or pytestmark) so the pure set stays tool-free"
            )
    candidate = TOOLS_DIR / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    pytest.fail(f"{name} is not installed; run: hack/tools.sh {installer or name}")
