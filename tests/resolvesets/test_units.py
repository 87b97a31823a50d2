"""Pure logic of ResolveSet revisions: names within limits, history selection, the encoding and
its integrity check. No cluster."""

from __future__ import annotations

import re

import pytest

from pivoter.resolvesets import (
    ANNOTATION_CHECKSUM,
    DATA_KEY,
    InputRef,
    decode,
    encode,
    label_value,
    revision_name,
    revisions_to_remove,
)
from tests.resolvesets.conftest import resolveset

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_short_names_are_kind_name_revision() -> None:
    assert revision_name(InputRef("Resolution", "web"), 3) == "resolution-web-r3"
    assert revision_name(InputRef("PlatformOperator", "etcd"), 1) == "platformoperator-etcd-r1"


@pytest.mark.parametrize("name", ["a" * 60, "x" * 253, "dotted.name.example.com"])
def test_long_names_fit_and_stay_distinct(name: str) -> None:
    ref = InputRef("PlatformOperator", name)
    names = {revision_name(ref, n) for n in (1, 99, 123456)}
    assert len(names) == 3
    for got in names:
        assert len(got) <= 63, got
        assert DNS_LABEL.match(got), got
    other = revision_name(InputRef("PlatformOperator", name + "b"), 1)
    assert other != revision_name(ref, 1)
    # the hash is of the input, not the revision: all revisions share a stem
    assert revision_name(ref, 1)[:-3] == revision_name(ref, 99)[:-4]


def test_label_values_are_valid_and_unique() -> None:
    assert label_value("web") == "web"
    long_a, long_b = label_value("a" * 100), label_value("a" * 101)
    assert long_a != long_b
    assert len(long_a) <= 63
    assert len(long_b) <= 63


def test_revision_numbers_start_at_one() -> None:
    with pytest.raises(ValueError, match="numbered from 1"):
        revision_name(InputRef("Resolution", "web"), 0)


@pytest.mark.parametrize(
    ("revisions", "keep", "protect", "expected"),
    [
        (range(1, 6), 10, (), []),
        (range(1, 13), 10, (), [1, 2]),
        (range(1, 13), 3, (2, 5), [1, 3, 4, 6, 7, 8, 9]),
        (range(1, 13), 1, (12, None), list(range(1, 12))),
        ([3, 7, 9], 1, (3,), [7]),
    ],
)
def test_history_keeps_newest_and_protected(
    revisions: range, keep: int, protect: tuple[int | None, ...], expected: list[int]
) -> None:
    assert revisions_to_remove(revisions, keep=keep, protect=protect) == expected


def test_history_always_keeps_the_latest() -> None:
    with pytest.raises(ValueError, match="latest revision stays"):
        revisions_to_remove([1, 2], keep=0)


def test_encode_decode_round_trip() -> None:
    ref = InputRef("Resolution", "web")
    document = resolveset(("db", "1.0.0"), ("app", "2.0.0"))
    config_map = encode(ref, 4, document, "pivoter-system")
    assert config_map["immutable"] is True
    labels = config_map["metadata"]["labels"]
    assert labels["pivoter.io/input-kind"] == "resolution"
    assert labels["pivoter.io/input-name"] == "web"
    assert labels["pivoter.io/revision"] == "4"
    assert len(labels["pivoter.io/selection-hash"]) == 63
    revision = decode(config_map)
    assert revision is not None
    assert revision.intact, revision.problem
    assert (revision.input, revision.number) == (ref, 4)
    assert revision.selection_hash == document.selection_hash
    assert revision.resolveset().selection_hash == document.selection_hash


def test_decode_reports_a_hand_written_document() -> None:
    ref = InputRef("Resolution", "web")
    config_map = encode(ref, 1, resolveset(("db", "1.0.0")), "ns")
    config_map["data"][DATA_KEY] = resolveset(("db", "9.9.9")).to_yaml()
    revision = decode(config_map)
    assert revision is not None
    assert not revision.intact
    assert "checksum" in revision.problem

    # a forger who also fixes the checksum is still caught by the selection hash
    from pivoter.resolvesets import checksum

    config_map["metadata"]["annotations"][ANNOTATION_CHECKSUM] = checksum(
        config_map["data"][DATA_KEY]
    )
    revision = decode(config_map)
    assert revision is not None
    assert "hash to" in revision.problem

    config_map = encode(ref, 1, resolveset(("db", "1.0.0")), "ns")
    config_map["immutable"] = False
    revision = decode(config_map)
    assert revision is not None
    assert "not immutable" in revision.problem


def test_decode_ignores_config_maps_that_are_not_revisions() -> None:
    assert decode({"metadata": {"name": "x"}, "data": {}}) is None
