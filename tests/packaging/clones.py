"""A clone of this repository as the next commit will be, for the packaging tests.

The packaging tests build from a clean clone (no build output, no ignored file, the tags), as a
fresh machine and hack/release.sh do. A clone of HEAD alone would test the last commit, not the
change being made, so the work tree's uncommitted changes (modified, deleted and untracked files
that are not ignored) are copied over and committed in the clone. In CI the work tree is clean and
the clone is HEAD itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_IDENTITY = {
    "GIT_AUTHOR_NAME": "pivoter tests",
    "GIT_AUTHOR_EMAIL": "tests@pivoter.invalid",
    "GIT_COMMITTER_NAME": "pivoter tests",
    "GIT_COMMITTER_EMAIL": "tests@pivoter.invalid",
}


def git(*args: str, cwd: Path = REPO) -> str:
    """``git ARGS`` in ``cwd``; stdout. Raises with git's stderr on failure."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **_IDENTITY},
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def snapshot_clone(target: Path) -> Path:
    """Clone the repository into ``target`` and commit the work tree's changes there; return it."""
    git("clone", "--quiet", str(REPO), str(target))
    changed = git("ls-files", "-z", "--modified", "--others", "--exclude-standard").split("\0")
    for name in filter(None, changed):
        source, copy = REPO / name, target / name
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
        elif copy.is_file():  # deleted in the work tree
            copy.unlink()
    if git("status", "--porcelain", cwd=target).strip():
        git("add", "--all", cwd=target)
        git("commit", "--quiet", "--no-verify", "-m", "the work tree, for the tests", cwd=target)
    return target
