"""catalogd's body, rendered while loading: the same bytes however the files were read.

The reference is the body built the obvious way, by parsing every file again and writing each
object with :func:`resolver.catalog.gojson.dumps` (what ``pivoter catalog serve`` did before the
body was rendered at load). :func:`resolver.catalog.load.load_served` must give exactly that,
cold or from the cache, in one process or on every core, and never parse a file twice.
"""

from __future__ import annotations

import gzip
import os
import random
import subprocess
import zlib
from pathlib import Path

import pytest

from resolver.catalog import gojson
from resolver.catalog import load as load_module
from resolver.catalog.decode import meta_of
from resolver.catalog.jsonl import (
    Body,
    MetaLine,
    crc32_combine,
    join,
    render_file,
    select,
    text_chunks,
)
from resolver.catalog.load import load_directory, load_served
from resolver.catalog.parse import parse_text
from resolver.catalog.walk import list_catalog_files
from tests.catalog.helpers import CATALOGS, DATA


def _reference(root: Path) -> tuple[bytes, list[MetaLine]]:
    files, problems = list_catalog_files(str(root))
    assert not problems
    text = b""
    lines = []
    for f in files:
        parsed = parse_text(Path(f.path).read_text())
        for blob, _ in parsed.objects:
            line = (gojson.dumps(blob) + "\n").encode()
            lines.append(MetaLine(*meta_of(blob), len(text), len(text) + len(line)))
            text += line
    return text, lines


@pytest.mark.parametrize("name", CATALOGS)
def test_the_body_is_what_parsing_again_gives(name: str, tmp_path: Path) -> None:
    root = DATA / name
    text, lines = _reference(root)
    for options in (
        {"use_cache": False, "workers": 1},
        {"use_cache": False, "workers": 2, "parallel_min_bytes": 0},
        {"cache_dir": str(tmp_path / "cache")},  # cold, fills the cache
        {"cache_dir": str(tmp_path / "cache")},  # warm
    ):
        catalog, body = load_served(root, **options)  # type: ignore[arg-type]
        assert gzip.decompress(body.gzip) == text, options
        assert body.size == len(text)
        assert list(body.lines) == lines
        assert catalog == load_directory(root, use_cache=False)


def test_the_body_is_one_gzip_member_that_gzip_itself_reads(tmp_path: Path) -> None:
    _, body = load_served(DATA / CATALOGS[0], use_cache=False)
    out = subprocess.run(["gzip", "-dc"], input=body.gzip, capture_output=True, check=True)
    assert out.stdout == _reference(DATA / CATALOGS[0])[0]
    # One member: a decompressor stops at the end of the first member and leaves nothing over.
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    assert decompressor.decompress(body.gzip) == out.stdout
    assert decompressor.eof
    assert decompressor.unused_data == b""


def test_an_empty_catalog_has_an_empty_body() -> None:
    body = join([])
    assert gzip.decompress(body.gzip) == b""
    assert body.size == 0
    assert body.lines == ()


def test_crc32_combine_is_zlibs() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = rng.randbytes(rng.randint(0, 5000))
        b = rng.randbytes(rng.randint(0, 5000))
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_render_file_keeps_go_numbers_and_meta_keys() -> None:
    lines = render_file([{"schema": "olm.bundle", "package": "p", "name": "b", "n": 1.5e300}])
    text = zlib.decompressobj(-zlib.MAX_WBITS).decompress(lines.deflate)
    assert text == b'{"n":1.5e+300,"name":"b","package":"p","schema":"olm.bundle"}\n'
    assert lines.metas == (("olm.bundle", "p", "b", len(text)),)
    assert lines.crc == zlib.crc32(text)


def test_a_warm_start_parses_nothing_and_a_changed_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "catalog"
    for name in CATALOGS[:1]:
        for path in (DATA / name).rglob("*"):
            if path.is_file():
                target = root / path.relative_to(DATA / name)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(path.read_bytes())
    cache = str(tmp_path / "cache")
    load_directory(root, cache_dir=cache)  # a CLI filled the cache without lines
    parsed: list[str] = []
    real = load_module.parse_text

    def spy(text: str):  # type: ignore[no-untyped-def]
        parsed.append(text[:40])
        return real(text)

    monkeypatch.setattr(load_module, "parse_text", spy)
    files, _ = list_catalog_files(str(root))
    load_served(root, cache_dir=cache, workers=1)
    assert len(parsed) == len(files)  # entries without lines are parsed once more, for the lines
    parsed.clear()
    _, warm = load_served(root, cache_dir=cache, workers=1)
    assert parsed == []
    load_directory(root, cache_dir=cache, workers=1)  # a CLI read keeps the lines in the cache
    _, again = load_served(root, cache_dir=cache, workers=1)
    assert parsed == []
    assert again == warm
    first = Path(files[0].path)
    os.utime(first, ns=(1, 1))
    _, changed = load_served(root, cache_dir=cache, workers=1)
    assert len(parsed) == 1
    assert gzip.decompress(changed.gzip) == gzip.decompress(warm.gzip)


def _random_body(seed: int) -> tuple[bytes, Body]:
    rng = random.Random(seed)
    files = [
        render_file(
            {
                "schema": rng.choice(["olm.bundle", "olm.channel", "custom"]),
                "package": f"p{i % 7}",
                "name": f"n{j}",
                "pad": "x" * rng.randint(0, 3000),
            }
            for j in range(rng.randint(0, 30))
        )
        for i in range(25)
    ]
    body = join(files)
    return gzip.decompress(body.gzip), body


@pytest.mark.parametrize("chunk", [1, 7, 1000, 1 << 20])
def test_the_text_comes_in_chunks_and_selected_lines_are_the_texts_own(chunk: int) -> None:
    text, body = _random_body(chunk)
    pieces = list(text_chunks(body.gzip, chunk))
    assert b"".join(pieces) == text
    assert all(len(p) <= chunk for p in pieces)
    for keep in (
        lambda line: line.package == "p3",
        lambda line: line.schema == "olm.channel" and line.name == "n4",
        lambda line: True,
        lambda line: False,
    ):
        expected = [text[line.start : line.end] for line in body.lines if keep(line)]
        assert list(select(body, keep, chunk)) == expected
