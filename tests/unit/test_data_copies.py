"""The copies of real data in tests/data are what tests/data/README.md says they are: each row of
its table maps a file or directory here to one under ../shared, and every file of the copy is
byte for byte the file at the same relative path there (so the licence and source noted hold).

A plain clone runs the suite from these copies; where ../shared is present (CI), this checks them
against it. The bundles are copied whole, so their file list must match too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tools import SHARED, requires_shared

DATA = Path(__file__).resolve().parents[1] / "data"
ROW = re.compile(r"^\| `(?P<here>[^`]+)` \| `(?P<there>[^`]+)` \|")
WHOLE = ("bundles/registry-v1/",)
"""Copies of a whole directory of ../shared: no file missing."""


def _rows() -> list[tuple[str, str]]:
    text = (DATA / "README.md").read_text()
    return [(m["here"], m["there"]) for line in text.splitlines() if (m := ROW.match(line))]


def _files(root: Path) -> list[str]:
    """The files under ``root``, relative to it (``root`` itself if it is a file)."""
    if root.is_file():
        return [""]
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_the_table_names_copies_that_exist() -> None:
    rows = _rows()
    assert len(rows) >= 19
    for here, there in rows:
        assert _files(DATA / here), f"tests/data/{here} is empty or missing"
        assert here.endswith("/") == there.endswith("/"), (here, there)
    assert {here for here, _ in rows} >= set(WHOLE)


@requires_shared
@pytest.mark.parametrize(("here", "there"), _rows(), ids=[here for here, _ in _rows()])
def test_each_copy_is_byte_for_byte_what_shared_holds(here: str, there: str) -> None:
    copy, source = DATA / here, SHARED / there
    differ = [
        name or here
        for name in _files(copy)
        if not (source / name).is_file()
        or (source / name).read_bytes() != (copy / name).read_bytes()
    ]
    assert differ == [], f"tests/data/{here}: not as in {source}"
    if here in WHOLE:
        assert _files(copy) == _files(source)
