"""``catalog test --changed-since GIT_REF | --changed-files FILE``: git's side of a pull request.

With a ref, git says which files under the catalog directory differ from the ref (committed or
not, untracked files included, renames as a deletion and an addition) and gives the catalog as it
was at the ref (``git archive`` into a temporary directory, extracted by the guarded unpacker of
``provisioners.unpack``); both catalogs are tested and
:func:`resolver.channeltest.changes.scope_report` keeps what the change touched or introduced.
With a list of files, only the packages they touch are reported. Called by
:mod:`pivoter.cli.catalog_test`.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pivoter.cli.exitcodes import ExitCode
from provisioners.unpack import Compression, UnpackError, UnpackLimits, unpack_tar
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.model import Catalog
from resolver.channeltest.changes import ChangedFiles, scope_report
from resolver.channeltest.report import Report

GIT_TIMEOUT = 300.0
"""Seconds one git command may take (an archive of a large catalog included)."""

ARCHIVE_LIMITS = UnpackLimits(max_total_bytes=8 << 30, max_entries=1_000_000)
"""The old tree of a catalog repository: larger than a bundle (the full indexes are hundreds of
MB in thousands of files), still bounded."""


class ChangeError(Exception):
    """The change cannot be worked out (no git, not a work tree, no such ref); ``code`` is the
    exit status."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILURE) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Since:
    """The files changed since a ref (relative to the catalog directory), and the catalog
    directory as it was at the ref (None when it did not exist there)."""

    files: frozenset[str]
    old_directory: str | None


def _git(args: Sequence[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        raise ChangeError("--changed-since needs git, which is not installed")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        return subprocess.run(
            [git, *args],
            cwd=cwd,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise ChangeError(f"git {args[0]} took more than {GIT_TIMEOUT:g} s") from None


def _out(done: subprocess.CompletedProcess[bytes], what: str) -> str:
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise ChangeError(f"{what}: {message[-1] if message else 'git failed'}")
    return done.stdout.decode(errors="surrogateescape")


def _paths(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


@contextmanager
def since(directory: str, ref: str) -> Iterator[Since]:
    """The changes under ``directory`` since ``ref`` and the catalog at ``ref`` (removed after)."""
    real = os.path.realpath(directory)
    top = _out(_git(["rev-parse", "--show-toplevel"], real), f"{directory}: not in a git work tree")
    top = os.path.realpath(top.strip())
    prefix = os.path.relpath(real, top)
    found = _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], top)
    commit = found.stdout.decode(errors="replace").strip()
    if found.returncode != 0 or not commit:
        raise ChangeError(f"--changed-since {ref}: no such commit in the repository at {top}")
    spec = [] if prefix == "." else [prefix]
    changed = _paths(
        _out(
            _git(["diff", "--name-only", "-z", "--no-renames", commit, "--", *spec], top),
            "git diff",
        )
    )
    changed += _paths(
        _out(
            _git(["ls-files", "-z", "--others", "--exclude-standard", "--", *spec], top),
            "git ls-files",
        )
    )
    files = frozenset(
        os.path.relpath(os.path.join(top, p), real).replace(os.sep, "/") for p in changed
    )
    with tempfile.TemporaryDirectory(prefix="pivoter-changed-since-") as tmp:
        old = _archive(top, commit, prefix, tmp)
        yield Since(files, old)


def _archive(top: str, commit: str, prefix: str, tmp: str) -> str | None:
    """Extract the catalog directory at ``commit`` under ``tmp``; None when it did not exist."""
    tree = f"{commit}^{{tree}}" if prefix == "." else f"{commit}:{prefix}"
    if _git(["cat-file", "-e", tree], top).returncode != 0:
        return None
    done = _git(
        ["archive", "--format=tar", commit, *([] if prefix == "." else ["--", prefix])], top
    )
    _out(done, f"git archive {commit[:12]}")
    root = os.path.join(tmp, "tree")
    try:  # the guarded reader of every archive pivoter opens (links, depth, sizes, headers)
        unpack_tar(io.BytesIO(done.stdout), Path(root), ARCHIVE_LIMITS, Compression.NONE)
    except UnpackError as err:
        raise ChangeError(f"git archive {commit[:12]}: {err}") from None
    return os.path.join(root, prefix)


def listed_files(path: str, directory: str) -> frozenset[str]:
    """The paths of a ``--changed-files`` list (one a line, relative to the working directory
    or absolute) that lie under ``directory``, relative to it."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    real = os.path.realpath(directory)
    out = set()
    for line in lines:
        if not line or line.startswith("#"):
            continue
        rel = os.path.relpath(os.path.realpath(line), real)
        if rel != ".." and not rel.startswith(".." + os.sep):
            out.add(rel.replace(os.sep, "/"))
    return frozenset(out)


def changed_report(
    now: Report,
    now_catalog: Catalog,
    *,
    directory: str,
    ref: str | None,
    files_list: str | None,
    test_old: Callable[[Catalog, Sequence[object], str], Report],
    load: Callable[[str], tuple[Catalog, list[object]]],
) -> Report:
    """``now`` narrowed to what the change touched or introduced.

    ``test_old`` tests the catalog at the ref (its load problems, the directory its origins are
    relative to); ``load`` reads a catalog directory.
    """
    listed = listed_files(files_list, directory) if files_list else frozenset()
    if ref is None:
        return scope_report(now, now_catalog, ChangedFiles(listed))
    with since(directory, ref) as found:
        before: Report | None = None
        before_catalog: Catalog | None = None
        if found.old_directory is not None and os.path.isdir(found.old_directory):
            try:
                before_catalog, problems = load(found.old_directory)
                before = test_old(before_catalog, problems, found.old_directory)
            except CatalogLoadError:
                before_catalog = None  # nothing readable there: every finding is new
        if before is None:
            before = Report(now.catalog, [])
        return scope_report(
            now, now_catalog, ChangedFiles(found.files | listed, ref), before, before_catalog
        )
