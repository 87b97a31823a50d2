"""Streamed JSON lines are split in linear time and one line is capped."""

from __future__ import annotations

import random

import orjson
import pytest

from resolver.catalog.sources import CatalogdSource, catalogd
from resolver.net import LineSplitter, LineTooLong
from tests.net.hostile import Step, hostile_server


def _split(data: bytes, sizes: list[int], cap: int) -> tuple[list[bytes], bytes]:
    splitter = LineSplitter(cap)
    lines: list[bytes] = []
    at = 0
    for size in sizes:
        lines += splitter.feed(data[at : at + size])
        at += size
    lines += splitter.feed(data[at:])
    return lines, splitter.finish()


@pytest.mark.parametrize("seed", range(20))
def test_lines_are_those_of_split_whatever_the_chunking(seed: int) -> None:
    rng = random.Random(seed)
    data = b"".join(
        rng.choice([b"\n", b"ab", b"{}", b"\n\n", b"x" * rng.randrange(1, 300)]) for _ in range(400)
    )
    sizes = [rng.randrange(0, 200) for _ in range(rng.randrange(1, 60))]
    lines, rest = _split(data, sizes, cap=10_000)
    *expected, tail = data.split(b"\n")
    assert lines == expected
    assert rest == tail


def test_a_50_mb_line_is_copied_once_not_once_per_chunk() -> None:
    """The old ``pending += chunk; pending.split()`` copied the whole pending line per chunk:
    50 MB in 64 KiB chunks is ~20 GB of copying. Each byte is copied once now."""
    size = 50 << 20
    chunk = b"x" * 65536
    splitter = LineSplitter(64 << 20)
    for _ in range(size // len(chunk)):
        assert splitter.feed(chunk) == []
    assert splitter.feed(b"}\nnext") == [b"x" * size + b"}"]
    assert splitter.copied_bytes == size + 1 + 4
    assert splitter.finish() == b"next"


def test_a_line_past_the_cap_is_refused_as_soon_as_it_passes() -> None:
    splitter = LineSplitter(1000)
    splitter.feed(b"a" * 600)
    with pytest.raises(LineTooLong, match="longer than 1000 bytes"):
        splitter.feed(b"a" * 600)
    assert splitter.copied_bytes == 600
    with pytest.raises(LineTooLong):
        LineSplitter(10).feed(b"ok\n" + b"b" * 11 + b"\nc")
    with pytest.raises(LineTooLong):
        LineSplitter(10).feed(b"b" * 11)
    assert LineSplitter(10).feed(b"b" * 10 + b"\n") == [b"b" * 10]


class _Counting(LineSplitter):
    instances: list[LineSplitter] = []

    def __init__(self, max_line_bytes: int) -> None:
        super().__init__(max_line_bytes)
        _Counting.instances.append(self)


def test_catalogd_client_splits_a_long_line_linearly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 20 MB object (under the cap) is accepted, and the client copies its bytes once."""
    monkeypatch.setattr(catalogd, "LineSplitter", _Counting)
    _Counting.instances.clear()
    blob = {"schema": "olm.package", "name": "p", "description": "d" * (20 << 20)}
    body = b'{"schema":"olm.package","name":"q"}\n' + orjson.dumps(blob) + b"\n"
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    script: list[Step] = [("send", head.encode() + body)]
    with hostile_server(script) as server:
        catalog = CatalogdSource(f"{server.url}/catalogs/x", max_line_bytes=64 << 20).fetch()
    assert sorted(p.name for p in catalog.packages) == ["p", "q"]
    (splitter,) = _Counting.instances
    assert splitter.copied_bytes <= len(body)
