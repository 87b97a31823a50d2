"""``pivoter catalog test`` on catalogs with hostile side files, and its memory.

Every file ``catalog test`` opens goes through the catalog file guard, as ``catalog validate``'s
do: a FIFO, a socket, a link to ``/dev/zero`` or out of the catalog, a chain of 1,500 links, a
huge (sparse) file and a tree 3,000 directories deep are each one finding, and the command ends
within seconds under a 1 GiB address space. And it reads the catalog as ``validate`` does, one
file at a time without a string per line: a file of 2 million short lines, which cost 650 MB per
32 MiB as a list of lines (for every file with a finding, all at once), is tested within the
memory ``validate`` needs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.cli.exitcodes import ExitCode
from provisioners.fstree import remove_tree
from tests.clirun import pivoter as run_pivoter

TIMEOUT = 60  # seconds: a command still running then is hanging (and fails the test)
CATALOG = """\
schema: olm.package
name: good
defaultChannel: stable
---
schema: olm.channel
package: good
name: stable
entries:
  - name: good.v1.0.0
  - name: good.v1.1.0
    replaces: good.v0.9.0
---
schema: olm.bundle
package: good
name: good.v1.0.0
image: quay.io/example/good-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: good, version: 1.0.0}
---
schema: olm.bundle
package: good
name: good.v1.1.0
image: quay.io/example/good-bundle:v1.1.0
properties:
  - type: olm.package
    value: {packageName: good, version: 1.1.0}
"""


@pytest.fixture(autouse=True)
def _clean_deep_trees(tmp_path: Path) -> Iterator[None]:
    """pytest's clean-up (shutil.rmtree) recurses: remove the deep tree without recursion."""
    yield
    for entry in list(tmp_path.iterdir()):
        remove_tree(entry)


def pivoter(
    *args: str, tmp: Path, address_space: int = 1 << 30
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {**os.environ, "PIVOTER_CACHE": str(tmp / "cache"), "NO_COLOR": "1"}
    started = time.monotonic()
    result = run_pivoter(*args, env=env, timeout=TIMEOUT, address_space=address_space)
    return result, time.monotonic() - started


def _deep_tree(top: Path, depth: int) -> None:
    top.mkdir(parents=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("x.yaml", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"schema: x.custom\nname: deep\n")
        os.close(leaf)
    finally:
        os.close(fd)


def _hostile_catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    (root / "good").mkdir(parents=True)
    (root / "good" / "catalog.yaml").write_text(CATALOG)
    os.mkfifo(root / "fifo.yaml")
    here = os.getcwd()
    os.chdir(root)  # a socket path is limited to 107 bytes: bind a relative one
    try:
        with socket.socket(socket.AF_UNIX) as server:
            server.bind("sock.yaml")
    finally:
        os.chdir(here)
    os.symlink("/dev/zero", root / "zero.yaml")
    (tmp_path / "secret.yaml").write_text("schema: olm.package\nname: stolen\n")
    os.symlink(tmp_path / "secret.yaml", root / "out.yaml")
    # 1,500 links to a real file, in a directory the catalog ignores: one link to their end.
    (root / "chain").mkdir()
    (root / "chain" / "l0").write_text("schema: x.custom\nname: chained\n")
    for i in range(1, 1500):
        os.symlink(f"l{i - 1}", root / "chain" / f"l{i}")
    (root / ".indexignore").write_text("chain/\n")
    os.symlink("chain/l1499", root / "chained.yaml")
    with open(root / "huge.yaml", "wb") as sparse:
        sparse.truncate(300 << 20)  # over the 256 MiB limit, nothing on disk
    _deep_tree(root / "deep", 3000)
    return root


@pytest.mark.timeout(TIMEOUT * 2)
def test_catalog_test_reports_each_hostile_side_file_in_one_line(tmp_path: Path) -> None:
    root = _hostile_catalog(tmp_path)
    result, seconds = pivoter("catalog", "test", "--no-cache", str(root), tmp=tmp_path)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    assert "MemoryError" not in result.stdout + result.stderr
    assert result.returncode == ExitCode.INVALID, result.stdout + result.stderr
    assert seconds < 30
    lines = result.stdout.splitlines()

    def finding(name: str, reason: str) -> None:
        assert any(f"{name}: {reason}" in line for line in lines), (name, result.stdout)

    finding("fifo.yaml", "not a regular file (a FIFO): not read")
    finding("sock.yaml", "not a regular file (a socket): not read")
    finding("zero.yaml", "symbolic link leaves the catalog root (-> /dev/zero)")
    finding("out.yaml", "symbolic link leaves the catalog root")
    finding("chained.yaml", "symbolic link loop")
    finding("huge.yaml", "file is 314,572,800 bytes, over the 268,435,456-byte limit")
    finding("d/d/d/d", "cannot read directory: File name too long")
    assert "stolen" not in result.stdout
    assert "good/stable (default)" in result.stdout  # the good part is still tested


def _long_catalog(tmp_path: Path, lines: int) -> Path:
    """A catalog whose one file has channel findings (a stranded and an unreachable entry) and
    ``lines`` short comment lines, plus a broken file (so the load falls back to reading the
    good files one by one)."""
    root = tmp_path / "long"
    (root / "good").mkdir(parents=True)
    with open(root / "good" / "catalog.yaml", "w") as out:
        out.write(CATALOG)
        out.write("#ab\n" * lines)
    (root / "broken.yaml").write_text("schema: olm.package\nname: [unclosed\n")
    return root


@pytest.mark.timeout(TIMEOUT * 2)
def test_catalog_test_needs_no_more_memory_than_validate(tmp_path: Path) -> None:
    """2 million lines (8 MiB): as a list of lines they took 180 MB more than ``validate``
    needs, and ``catalog test`` died with MemoryError (exit 70) under 256 MiB; read as
    ``validate`` reads, it passes under the limit ``validate`` passes under."""
    root = _long_catalog(tmp_path, 2 << 20)
    limit = 256 << 20
    validated, _ = pivoter("catalog", "validate", "--no-cache", str(root), tmp=tmp_path)
    assert validated.returncode == ExitCode.INVALID, validated.stderr
    validated, _ = pivoter(
        "catalog", "validate", "--no-cache", str(root), tmp=tmp_path, address_space=limit
    )
    assert validated.returncode == ExitCode.INVALID, validated.stderr
    tested, seconds = pivoter(
        "catalog", "test", "--no-cache", str(root), tmp=tmp_path, address_space=limit
    )
    assert "MemoryError" not in tested.stderr
    assert "Traceback" not in tested.stderr, tested.stderr
    assert tested.returncode == ExitCode.INVALID, tested.stderr
    assert "broken.yaml" in tested.stdout  # the load problem, first
    # The channel findings of the long file, moved to their entries' lines (locate read it).
    assert "good/catalog.yaml:9: package 'good', channel 'stable': users of good.v1.0.0" in (
        tested.stdout
    )
    assert "good/catalog.yaml:10: package 'good'" in tested.stdout
    assert seconds < 30
