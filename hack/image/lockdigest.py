"""Print the digest of the pyproject.toml list a lock file was made from (``runtime`` or ``build``).

``hack/image/lock.sh`` writes it into each lock file's first line; ``tests/image/test_lock.py``
recomputes it, so a change to the dependencies without a new lock fails a test. The digest covers
the requirement strings as written, sorted: reordering the list does not need a new lock.
"""

from __future__ import annotations

import hashlib
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def requirements(kind: str, pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The requirement strings of ``kind``: the project's dependencies or its build requirements."""
    data = tomllib.loads(pyproject.read_text())
    if kind == "runtime":
        return list(data["project"]["dependencies"])
    if kind == "build":
        return list(data["build-system"]["requires"])
    raise ValueError(f"unknown kind {kind!r} (runtime or build)")


def digest(kind: str, pyproject: Path = ROOT / "pyproject.toml") -> str:
    """sha256 (first 16 hex digits) of the sorted requirement strings of ``kind``."""
    text = "\n".join(sorted(requirements(kind, pyproject)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


if __name__ == "__main__":
    print(digest(sys.argv[1]))
