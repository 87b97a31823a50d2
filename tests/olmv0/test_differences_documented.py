"""Every difference the differential accepts (tests/olmv0/differences.py) is a row of
docs/registry-v1.md's "Compared with OLM v0", and each row is used."""

from __future__ import annotations

import re
from pathlib import Path

from tests.olmv0.differences import DOCUMENTED, Difference, undocumented

DOC = Path(__file__).resolve().parents[2] / "docs" / "registry-v1.md"


def test_each_accepted_difference_has_its_row_in_the_docs() -> None:
    text = DOC.read_text()
    section = text.split("## Compared with OLM v0", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| (O[0-9]+) \|", section, flags=re.M))
    assert {d.id for d in DOCUMENTED} == rows


def test_an_unexplained_difference_is_reported() -> None:
    label = Difference("Deployment", "ns/op", "metadata.labels.olm.owner", "op.v1", "<absent>")
    replicas = Difference("Deployment", "ns/op", "spec.replicas", "1", "2")
    foreign = Difference("Role", "ns/op-reader", "", "present", "<absent>")
    assert undocumented([label, replicas, foreign]) == [replicas, foreign]
