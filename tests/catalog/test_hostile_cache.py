"""The parsed-catalog cache read as hostile input (issue 34).

Whatever is planted where a catalog's cache file would be (a FIFO, links, devices, a directory or
a FIFO for the cache directory, a huge sparse file, another user's or a world-writable file, the
old pickle format with its bombs, and every way the JSON format can be wrong: types, nesting,
sizes, lengths, checksums), ``pivoter catalog validate`` and ``render`` print exactly what a cold
run prints, exit 0, within seconds, under a 1 GiB address space, and the next write rebuilds the
file. ``catalog serve``'s loader serves. The codec refuses a wrong value in every position of
every model class (each position of a sample holding every class is mutated).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import struct
import threading
import time
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from pivoter.catalogserver.reload import load_snapshot
from resolver.catalog import cache as parsed_cache
from resolver.catalog.load import load_directory, load_served
from resolver.catalog.render import write_json
from resolver.catalog.walk import list_catalog_files
from tests.clirun import pivoter

CATALOG = """schema: olm.package
name: foo
defaultChannel: stable
icon: {base64data: iVBORw0KGgo=, mediatype: image/png}
description: The foo operator
properties:
- {type: owner, value: {team: a, size: 3}}
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v1.0.0
- name: foo.v1.1.0
  replaces: foo.v1.0.0
  skips: [foo.v0.9.0]
  skipRange: ">=0.9.0 <1.1.0"
properties:
- {type: x.marker}
---
schema: olm.bundle
package: foo
name: foo.v1.0.0
image: quay.io/foo/foo:v1.0.0
properties:
- {type: olm.package, value: {packageName: foo, version: 1.0.0}}
relatedImages:
- {name: op, image: quay.io/foo/op:v1}
---
schema: olm.bundle
package: foo
name: foo.v1.1.0
image: quay.io/foo/foo:v1.1.0
properties:
- {type: olm.package, value: {packageName: foo, version: 1.1.0}}
- {type: olm.gvk, value: {group: foo.io, kind: Foo, version: v1}}
---
schema: olm.deprecations
package: foo
entries:
- reference: {schema: olm.bundle, name: foo.v1.0.0}
  message: use 1.1
---
schema: x.custom
name: thing
data: {a: [1, 2.5, true, null, "s", -0.0], b: {"": {}}}
"""
"""One catalog with every class the cache holds (an icon, channel entries with skips, a property
without a value, related images, deprecations, an opaque blob)."""

SECONDS = 10.0
"""A run with any planted file takes a few hundredths of a second; a hang or a bomb takes more."""


@dataclasses.dataclass
class Planted:
    """A catalog, a cache home to plant in, and what a cold run printed."""

    root: Path
    xdg: Path
    cold: dict[str, tuple[int, str, str]]

    @property
    def cache_dir(self) -> Path:
        return self.xdg / "pivoter" / "catalogs"

    @property
    def path(self) -> Path:
        """The exact file the cache of ``root`` is read from."""
        return Path(parsed_cache._cache_path(str(self.cache_dir), str(self.root)))

    def good(self) -> bytes:
        """A sound cache file (with served lines) for this catalog, as pivoter writes it."""
        load_served(self.root, cache_dir=str(self.cache_dir))
        data = self.path.read_bytes()
        self.path.unlink()
        return data


def _env(xdg: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PIVOTER_CACHE"}
    env["XDG_CACHE_HOME"] = str(xdg)
    return env


COMMANDS = ("validate", "render")


def _run(xdg: Path, command: str, root: Path) -> tuple[int, str, str]:
    start = time.monotonic()
    result = pivoter(
        "catalog", command, str(root), env=_env(xdg), address_space=1 << 30, timeout=60
    )
    assert time.monotonic() - start < SECONDS, (command, result.stderr)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    root = tmp_path / "cat"
    root.mkdir()
    (root / "catalog.yaml").write_text(CATALOG)
    cold_home = tmp_path / "cold"
    cold = {command: _run(cold_home, command, root) for command in COMMANDS}
    for code, _, err in cold.values():
        assert (code, err) == (0, "")
    xdg = tmp_path / "xdg"
    return Planted(root, xdg, cold)


def _assert_same_as_cold(p: Planted) -> None:
    for command in COMMANDS:
        assert _run(p.xdg, command, p.root) == p.cold[command], command


def _assert_rebuilt(p: Planted) -> None:
    assert p.path.read_bytes().startswith(parsed_cache._MAGIC)
    assert p.path.stat().st_mode & 0o777 == 0o600
    assert list(parsed_cache.read(str(p.cache_dir), str(p.root)).files) == ["catalog.yaml"]


# -- the file itself, and the directories above it ----------------------------------------------


def _fifo(p: Planted) -> None:
    os.mkfifo(p.path)


def _directory(p: Planted) -> None:
    p.path.mkdir()


def _link_to_dev_zero(p: Planted) -> None:
    p.path.symlink_to("/dev/zero")


def _link_loop(p: Planted) -> None:
    p.path.symlink_to(p.path.name)


def _link_outside(p: Planted) -> None:
    outside = p.xdg / "elsewhere.cache"
    outside.write_bytes(p.good())
    outside.chmod(0o600)
    p.path.symlink_to(outside)


def _sparse_over_the_limit(p: Planted) -> None:
    with p.path.open("wb") as f:
        f.truncate(parsed_cache.MAX_CACHE_BYTES + 1)


def _sparse_zeros(p: Planted) -> None:
    with p.path.open("wb") as f:
        f.truncate(64 << 20)


def _cache_dir_is_a_fifo(p: Planted) -> None:
    p.cache_dir.rmdir()
    os.mkfifo(p.cache_dir)


def _cache_dir_links_to_a_fifo(p: Planted) -> None:
    p.cache_dir.rmdir()
    os.mkfifo(p.xdg / "fifo")
    p.cache_dir.symlink_to(p.xdg / "fifo")


def _cache_dir_link_loop(p: Planted) -> None:
    p.cache_dir.rmdir()
    p.cache_dir.symlink_to(p.cache_dir.name)


def _parent_is_a_file(p: Planted) -> None:
    p.cache_dir.rmdir()
    p.cache_dir.parent.rmdir()
    p.cache_dir.parent.write_text("not a directory")


def _bytes(data: bytes) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        p.path.write_bytes(data)

    return plant


def _truncated(p: Planted) -> None:
    good = p.good()
    p.path.write_bytes(good[: len(good) // 2])


FILES: dict[str, tuple[Callable[[Planted], None], bool]] = {
    # name -> (planter, whether the next write can replace what was planted)
    "fifo": (_fifo, True),
    "directory": (_directory, False),
    "link-to-dev-zero": (_link_to_dev_zero, True),
    "link-loop": (_link_loop, True),
    "link-outside": (_link_outside, True),
    "sparse-over-the-limit": (_sparse_over_the_limit, True),
    "sparse-64-mib-of-zeros": (_sparse_zeros, True),
    "cache-dir-is-a-fifo": (_cache_dir_is_a_fifo, False),
    "cache-dir-links-to-a-fifo": (_cache_dir_links_to_a_fifo, False),
    "cache-dir-link-loop": (_cache_dir_link_loop, False),
    "parent-is-a-file": (_parent_is_a_file, False),
    "empty": (_bytes(b""), True),
    "garbage": (_bytes(os.urandom(4096)), True),
    "magic-only": (_bytes(parsed_cache._MAGIC), True),
    "truncated": (_truncated, True),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_a_planted_file_is_ignored_and_rebuilt(planted: Planted, name: str) -> None:
    planter, rebuildable = FILES[name]
    planted.cache_dir.mkdir(parents=True)
    planter(planted)
    _assert_same_as_cold(planted)
    if rebuildable:
        _assert_rebuilt(planted)


def test_a_cache_directory_that_links_to_a_directory_is_used(planted: Planted) -> None:
    target = planted.xdg / "real-cache"
    target.mkdir(parents=True)
    planted.cache_dir.parent.mkdir(parents=True)
    planted.cache_dir.symlink_to(target)  # ~/.cache on another disk: an ordinary setup
    _assert_same_as_cold(planted)
    assert [p.name for p in target.iterdir()] == [planted.path.name]
    assert parsed_cache.read(str(planted.cache_dir), str(planted.root)).files


# -- the format earlier versions wrote: a pickle, with its bombs ----------------------------------


def _old_pickle(p: Planted, files: object, protocol: int = 5) -> bytes:
    return pickle.dumps((5, os.path.realpath(p.root), files), protocol=protocol)


def _signature(p: Planted) -> tuple[int, int, int, int]:
    (ref,), problems = list_catalog_files(str(p.root))
    assert not problems
    return ref.signature


def _dag(levels: int) -> list[Any]:
    """A list whose every level holds the one below twice: 2^levels leaves, ~10 bytes a level."""
    node: list[Any] = []
    for _ in range(levels):
        node = [node, node]
    return node


class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


def _dag_entry(p: Planted) -> bytes:
    return _old_pickle(p, {"catalog.yaml": (_signature(p), pickle.dumps(([_dag(60)], None)))})


PICKLES: dict[str, Callable[[Planted], bytes]] = {
    "dag-of-lists": _dag_entry,
    "dag-as-the-whole-file": lambda p: pickle.dumps(_dag(60), protocol=5),
    "same-object-a-million-times": lambda p: pickle.dumps([["x" * 1000] * 1_000_000]),
    # LONG_BINPUT 2^30: the C unpickler sizes its memo to 2^31 pointers (16 GiB) and zeroes it
    "memo-index-bomb": lambda p: b"\x80\x05N" + b"r" + struct.pack("<I", 1 << 30) + b".",
    # BINBYTES8 of 1 TiB in 20 bytes: allocated before it is read
    "binbytes8-bomb": lambda p: b"\x80\x05\x8e" + struct.pack("<Q", 1 << 40) + b"xx.",
    "long-binunicode-bomb": lambda p: b"\x80\x05X" + struct.pack("<I", 0xFFFFFFF0) + b"xx.",
    "cycle": lambda p: pickle.dumps(_cycle(), protocol=5),
    "protocol-0": lambda p: _old_pickle(p, {"catalog.yaml": (_signature(p), b"")}, protocol=0),
    "protocol-2": lambda p: _old_pickle(p, {"catalog.yaml": (_signature(p), b"")}, protocol=2),
    "runs-code": lambda p: _old_pickle(p, _RunsCode(p.xdg / "code-ran")),
}


@pytest.mark.parametrize("name", sorted(PICKLES))
def test_an_old_pickle_is_never_unpickled(planted: Planted, name: str) -> None:
    planted.cache_dir.mkdir(parents=True)
    planted.path.write_bytes(PICKLES[name](planted))
    legacy = planted.path.with_suffix(".pickle")  # where earlier versions kept it
    legacy.write_bytes(planted.path.read_bytes())
    _assert_same_as_cold(planted)
    _assert_rebuilt(planted)
    assert not legacy.exists()  # removed by the first write
    assert not (planted.xdg / "code-ran").exists()


# -- the JSON format, wrong in every way --------------------------------------------------------


def _split(good: bytes) -> tuple[list[Any], list[bytes]]:
    """A cache file's header (decoded) and its entries' bytes."""
    rest = good[len(parsed_cache._MAGIC) :]
    line, _, blobs = rest.partition(b"\n")
    header = orjson.loads(line)
    entries = []
    for stored in header[3]:
        entries.append(blobs[: stored[2]])
        blobs = blobs[stored[2] :]
    return header, entries


def _join(header: list[Any] | bytes, entries: list[bytes]) -> bytes:
    text = header if isinstance(header, bytes) else orjson.dumps(header)
    return parsed_cache._MAGIC + text + b"\n" + b"".join(entries)


def _with_entry(
    edit: Callable[[list[Any]], object], *, text: Callable[[bytes], bytes] = bytes
) -> Callable[[Planted], None]:
    """A planter: the sound file with its entry's JSON edited (``edit`` on the decoded entry,
    then ``text`` on its JSON text), the header's length and CRC matching the new entry."""

    def plant(p: Planted) -> None:
        header, (entry,) = _split(p.good())
        json_text, _, spilled = entry.partition(b"\n")
        raw = orjson.loads(json_text)
        edited = edit(raw)
        json_text = text(orjson.dumps(raw if edited is None else edited))
        relpath, signature = header[3][0][0], tuple(header[3][0][1])
        blob = json_text + b"\n" + spilled
        files = {relpath: (signature, blob)}
        parsed_cache.write(str(p.cache_dir), str(p.root), parsed_cache.FileCache(files))

    return plant


def _objects(raw: list[Any]) -> list[Any]:
    objects: list[Any] = raw[0]
    return objects


def _fields(raw: list[Any], cls: str) -> list[Any]:
    fields: list[Any] = next(o[1] for o in raw[0] if o[0] == cls)
    return fields


def _set(
    getter: Callable[[list[Any]], list[Any]], index: int, value: object
) -> Callable[[list[Any]], None]:
    def edit(raw: list[Any]) -> None:
        getter(raw)[index] = value

    return edit


def _placeholder(value: bytes) -> Callable[[bytes], bytes]:
    return lambda text: text.replace(b'"PLACEHOLDER"', value, 1)


def _meta_blob(raw: list[Any]) -> list[Any]:
    return _fields(raw, "Meta")


DEEP = 1000


ENTRIES: dict[str, Callable[[Planted], None]] = {
    "name-is-a-number": _with_entry(_set(lambda r: _fields(r, "Package"), 0, 5)),
    "line-is-a-string": _with_entry(lambda r: _fields(r, "Bundle")[5].__setitem__(1, "1")),
    "line-is-a-boolean": _with_entry(lambda r: _fields(r, "Bundle")[5].__setitem__(1, True)),
    "line-is-a-float": _with_entry(lambda r: _fields(r, "Bundle")[5].__setitem__(1, 1.0)),
    "properties-is-an-object": _with_entry(_set(lambda r: _fields(r, "Bundle"), 3, {})),
    "value-with-two-values": _with_entry(
        lambda r: _fields(r, "Bundle")[3][0].__setitem__(1, [1, 2])
    ),
    "value-not-wrapped": _with_entry(lambda r: _fields(r, "Bundle")[3][0].__setitem__(1, "x")),
    "unknown-class": _with_entry(lambda r: _objects(r)[0].__setitem__(0, "Catalog")),
    "class-is-a-number": _with_entry(lambda r: _objects(r)[0].__setitem__(0, 1)),
    "a-field-missing": _with_entry(lambda r: _fields(r, "Channel").pop()),
    "a-field-too-many": _with_entry(lambda r: _fields(r, "Channel").append(None)),
    "icon-is-a-string": _with_entry(_set(lambda r: _fields(r, "Package"), 2, "x")),
    "blob-is-a-list": _with_entry(_set(_meta_blob, 3, [])),
    "objects-is-an-object": _with_entry(lambda r: {"0": r[0]}),
    "entry-is-a-number": _with_entry(lambda r: 5),
    "blob-1000-deep": _with_entry(
        _set(_meta_blob, 3, "PLACEHOLDER"),
        text=_placeholder(b'{"d":' + b"[" * DEEP + b"]" * DEEP + b"}"),
    ),
    "value-300-deep": _with_entry(
        lambda r: _fields(r, "Bundle")[3][0].__setitem__(1, ["PLACEHOLDER"]),
        text=_placeholder(b"[" * 300 + b"]" * 300),
    ),
    "nan": _with_entry(
        lambda r: _fields(r, "Bundle")[3][0].__setitem__(1, ["PLACEHOLDER"]),
        text=_placeholder(b"NaN"),
    ),
    "lone-surrogate": _with_entry(
        _set(lambda r: _fields(r, "Bundle"), 1, "PLACEHOLDER"), text=_placeholder(b'"\\ud800"')
    ),
    "integer-of-70-bits": _with_entry(
        lambda r: _fields(r, "Bundle")[5].__setitem__(1, "PLACEHOLDER"),
        text=_placeholder(str(1 << 70).encode()),
    ),
    "integer-of-20000-digits": _with_entry(
        lambda r: _fields(r, "Bundle")[5].__setitem__(1, "PLACEHOLDER"),
        text=_placeholder(b"1" * 20_000),
    ),
    "the-same-object-200000-times": _with_entry(
        lambda r: [[o for o in r[0] if o[0] == "Meta"] * 200_000, None]
    ),
    "lines-crc-past-32-bits": _with_entry(lambda r: r[1].__setitem__(1, 1 << 40)),
    "lines-size-does-not-add-up": _with_entry(lambda r: r[1].__setitem__(2, r[1][2] + 1)),
    "lines-negative-length": _with_entry(
        lambda r: (r[1][3][0].__setitem__(3, -5), r[1][3][1].__setitem__(3, r[1][3][1][3] + 5))
    ),
    "bytes-past-the-entry": _with_entry(lambda r: r[1].__setitem__(0, 1 << 40)),
    "bytes-negative": _with_entry(lambda r: r[1].__setitem__(0, -1)),
    "bytes-left-over": _with_entry(lambda r: r[1].__setitem__(0, r[1][0] - 1)),
}


def _with_header(edit: Callable[[list[Any]], object]) -> Callable[[Planted], None]:
    def plant(p: Planted) -> None:
        header, entries = _split(p.good())
        edited = edit(header)
        p.path.write_bytes(_join(header if edited is None else edited, entries))  # type: ignore[arg-type]
        p.path.chmod(0o600)

    return plant


def _flip_a_byte(p: Planted) -> None:
    header, (entry,) = _split(p.good())
    broken = entry.replace(b'"foo.v1.0.0"', b'"foo.v6.0.0"', 1)  # same length, valid JSON
    p.path.write_bytes(_join(header, [broken]))
    p.path.chmod(0o600)


HEADERS: dict[str, Callable[[Planted], None]] = {
    "root-of-another-catalog": _with_header(lambda h: h.__setitem__(2, "/elsewhere")),
    "another-format": _with_header(lambda h: h.__setitem__(0, h[0] + 1)),
    "another-model": _with_header(lambda h: h.__setitem__(1, "0" * 16)),
    "negative-length": _with_header(lambda h: h[3][0].__setitem__(2, -1)),
    "length-past-the-end": _with_header(lambda h: h[3][0].__setitem__(2, 1 << 62)),
    "bytes-after-the-last-entry": _with_header(lambda h: h[3][0].__setitem__(2, h[3][0][2] - 1)),
    "not-json": _with_header(lambda h: b"{not json"),
    "1000-deep": _with_header(lambda h: b"[" * DEEP + b"]" * DEEP),
    "signature-of-five": _with_header(lambda h: h[3][0][1].append(1)),
    "crc-does-not-match": _flip_a_byte,
}


@pytest.mark.parametrize("name", sorted(ENTRIES) + [f"header-{n}" for n in sorted(HEADERS)])
def test_a_malformed_cache_file_is_ignored_and_rebuilt(planted: Planted, name: str) -> None:
    planted.cache_dir.mkdir(parents=True)
    planter = HEADERS[name.removeprefix("header-")] if name.startswith("header-") else ENTRIES[name]
    planter(planted)
    assert planted.path.read_bytes().startswith(parsed_cache._MAGIC)
    _assert_same_as_cold(planted)
    _assert_rebuilt(planted)


def test_an_entry_over_its_budget_is_not_even_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[bytes] = []
    monkeypatch.setattr(parsed_cache, "unpack_entry", parsed.append)
    blob = b"x" * (parsed_cache.entry_budget(1000) + 1)
    cache = parsed_cache.FileCache({"f.yaml": ((1000, 1, 2, 3), blob)})
    assert cache.get("f.yaml", (1000, 1, 2, 3)) is None
    assert not parsed


# -- whose file it is ---------------------------------------------------------------------------


def _different_but_sound(p: Planted) -> bytes:
    """A sound cache file whose objects are not the catalog's (a package renamed)."""
    header, (entry,) = _split(p.good())
    edited = entry.replace(b'"The foo operator"', b'"The bar operator"', 1)
    header[3][0][2] = len(edited)
    header[3][0][3] = __import__("zlib").crc32(edited)
    return _join(header, [edited])


@pytest.mark.parametrize(
    ("mode", "owner", "used"),
    [
        (0o600, None, True),  # ours: used as it is, even when wrong (the documented limit)
        (0o666, None, False),
        (0o620, None, False),
        (0o602, None, False),
        (0o600, 65534, False),
    ],
)
def test_only_our_own_unshared_file_is_read(
    planted: Planted, mode: int, owner: int | None, used: bool
) -> None:
    if owner is not None and os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    planted.cache_dir.mkdir(parents=True)
    planted.path.write_bytes(_different_but_sound(planted))
    planted.path.chmod(mode)
    if owner is not None:
        os.chown(planted.path, owner, owner)
    code, out, err = _run(planted.xdg, "render", planted.root)
    assert (code, err) == (0, "")
    assert ("The bar operator" in out) == used
    assert (out == planted.cold["render"][1]) == (not used)


# -- catalog serve ------------------------------------------------------------------------------


def test_serve_loads_with_a_fifo_where_the_cache_should_be(
    planted: Planted, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIVOTER_CACHE", str(planted.xdg / "cold"))
    cold = load_snapshot(str(planted.root), name="c")
    monkeypatch.setenv("PIVOTER_CACHE", str(planted.xdg / "pivoter"))
    planted.cache_dir.mkdir(parents=True)
    os.mkfifo(planted.path)
    loaded: list[Any] = []
    worker = threading.Thread(
        target=lambda: loaded.append(load_snapshot(str(planted.root), name="c")), daemon=True
    )
    worker.start()
    worker.join(SECONDS)
    assert loaded, "load_snapshot blocked on the FIFO"
    assert loaded[0].jsonl_gzip == cold.jsonl_gzip
    assert loaded[0].catalog == cold.catalog
    warm = load_snapshot(str(planted.root), name="c")  # from the rebuilt cache
    assert warm.jsonl_gzip == cold.jsonl_gzip


@pytest.mark.parametrize("name", ["bytes-past-the-entry", "lines-crc-past-32-bits"])
def test_served_lines_that_do_not_add_up_are_rebuilt(planted: Planted, name: str) -> None:
    _, cold = load_served(planted.root, use_cache=False)
    planted.cache_dir.mkdir(parents=True)
    ENTRIES[name](planted)
    _, body = load_served(planted.root, cache_dir=str(planted.cache_dir))
    assert body == cold


# -- the codec, position by position -------------------------------------------------------------


def _accepts(hint: Any, value: Any, *, is_field: bool = False) -> bool:
    """Does the model's type ``hint`` admit the encoded ``value``? (The test's own reading of the
    annotations, independent of the codec's.)"""
    if hint is str:
        return type(value) is str
    if hint is int or hint is bytes:  # bytes: the length of what follows the JSON
        return type(value) is int and -(1 << 63) <= value < 1 << 64
    if hint is Any:
        return type(value) is list and len(value) <= 1 if is_field else True
    if dataclasses.is_dataclass(hint):
        fields = dataclasses.fields(hint)
        hints = typing.get_type_hints(hint)
        return (
            type(value) is list
            and len(value) == len(fields)
            and all(
                _accepts(hints[f.name], v, is_field=True)
                for f, v in zip(fields, value, strict=True)
            )
        )
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return value is None or _accepts(rest[0], value)
    if args and all(dataclasses.is_dataclass(a) for a in args):  # a union: [class name, fields]
        by_name = {a.__name__: a for a in args}
        return (
            type(value) is list
            and len(value) == 2
            and value[0] in by_name
            and _accepts(by_name[value[0]], value[1])
        )
    if origin in (tuple, list) and (origin is list or args[-1] is Ellipsis):
        return type(value) is list and all(_accepts(args[0], v) for v in value)
    if origin is tuple:
        return (
            type(value) is list
            and len(value) == len(args)
            and all(_accepts(a, v) for a, v in zip(args, value, strict=True))
        )
    if origin is Mapping:
        return type(value) is dict
    raise AssertionError(f"the test does not know {hint!r}: teach _accepts")


def _positions(
    hint: Any, value: Any, path: tuple[int, ...] = (), *, is_field: bool = False, own: bool = True
) -> Iterator[tuple[tuple[int, ...], Any, bool, bool]]:
    """Every position of the encoded ``value`` the model types (not inside JSON values), with
    its type and whether it is the position's own (not for the value of an optional, whose
    position is typed by the optional)."""
    yield path, hint, is_field, own
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        for i, f in enumerate(dataclasses.fields(hint)):
            yield from _positions(hints[f.name], value[i], (*path, i), is_field=True)
        return
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if type(None) in args:
        if value is not None:
            rest = [a for a in args if a is not type(None)]
            yield from _positions(rest[0], value, path, own=False)
    elif args and all(dataclasses.is_dataclass(a) for a in args):
        cls = next(a for a in args if a.__name__ == value[0])
        yield from _positions(cls, value[1], (*path, 1))
    elif origin in (tuple, list) and (origin is list or args[-1] is Ellipsis):
        for i, item in enumerate(value):
            yield from _positions(args[0], item, (*path, i))
    elif origin is tuple:
        for i, (arg, item) in enumerate(zip(args, value, strict=True)):
            yield from _positions(arg, item, (*path, i))


def _replaced(value: Any, path: tuple[int, ...], new: Any) -> Any:
    if not path:
        return new
    copy = list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


CANDIDATES: tuple[Any, ...] = (7, "7", None, [], {}, 1.5, True, [[]], [7], ["7", 7])


def _is_class(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


def _classes(hint: Any, seen: set[str]) -> set[str]:
    """Every dataclass reachable from ``hint`` by the annotations."""
    if _is_class(hint) and hint.__name__ not in seen:
        seen.add(hint.__name__)
        for sub in typing.get_type_hints(hint).values():
            _classes(sub, seen)
    for arg in typing.get_args(hint):
        _classes(arg, seen)
    return seen


@pytest.mark.parametrize("kind", ["entry", "header"])
def test_every_position_of_every_class_refuses_a_wrong_value(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "cat"
    root.mkdir()
    (root / "catalog.yaml").write_text(CATALOG)
    cache_dir = tmp_path / "cache"
    load_served(root, cache_dir=str(cache_dir))
    header, (entry,) = _split(
        Path(parsed_cache._cache_path(str(cache_dir), str(root))).read_bytes()
    )
    json_text, _, spilled = entry.partition(b"\n")
    hint: Any
    if kind == "entry":
        hint, raw = parsed_cache.FileEntry, orjson.loads(json_text)

        def decodes(value: Any) -> bool:
            return parsed_cache.unpack_entry(orjson.dumps(value) + b"\n" + spilled) is not None

    else:
        hint, raw = parsed_cache._Header, header

        def decodes(value: Any) -> bool:
            try:
                parsed_cache._HEADER.decode(value)
            except ValueError:
                return False
            return True

    assert decodes(raw)
    positions = list(_positions(hint, raw))
    visited = {h.__name__ for _, h, _, _ in positions if _is_class(h)}
    assert visited == _classes(hint, set())  # the sample holds every class of the model
    tried = 0
    for path, position_hint, is_field, own in positions:
        for candidate in CANDIDATES if own else ():
            if _accepts(position_hint, candidate, is_field=is_field):
                continue
            mutated = _replaced(raw, path, candidate)
            assert not decodes(mutated), (path, position_hint, candidate)
            tried += 1
    assert tried > (500 if kind == "entry" else 50)


@pytest.mark.parametrize(
    "hint", [float, bool, set[str], dict[str, int], str | int, tuple[()], type(None)]
)
def test_a_type_the_codec_does_not_know_fails_at_once(hint: Any) -> None:
    @dataclasses.dataclass(frozen=True)
    class Added:
        name: str
        added: Any

    Added.__annotations__["added"] = hint
    with pytest.raises(TypeError, match="cannot hold"):
        parsed_cache._codec(Added)


def test_the_shape_names_every_field() -> None:
    @dataclasses.dataclass(frozen=True)
    class One:
        name: str

    @dataclasses.dataclass(frozen=True)
    class Other:
        name: int

    assert parsed_cache._codec(One).shape != parsed_cache._codec(Other).shape
    for cls in _classes(parsed_cache.FileEntry, set()):
        assert f"{cls}(" in parsed_cache._ENTRY.shape


def test_any_truncation_of_an_entry_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "cat"
    root.mkdir()
    (root / "catalog.yaml").write_text(CATALOG)
    cache_dir = tmp_path / "cache"
    load_served(root, cache_dir=str(cache_dir))
    ((_, blob),) = parsed_cache.read(str(cache_dir), str(root)).files.values()
    assert parsed_cache.unpack_entry(blob) is not None
    for cut in range(len(blob)):
        assert parsed_cache.unpack_entry(blob[:cut]) is None


# -- writing ------------------------------------------------------------------------------------


def test_write_failures_only_cost_speed(tmp_path: Path) -> None:
    root = tmp_path / "cat"
    root.mkdir()
    (root / "catalog.yaml").write_text(CATALOG)
    cache_dir = tmp_path / "cache"
    expected = load_directory(root, use_cache=False)
    not_bytes = parsed_cache.FileCache({"x.yaml": ((1, 2, 3, 4), [[]])})  # type: ignore[dict-item]
    parsed_cache.write(str(cache_dir), str(root), not_bytes)  # must not raise
    odd_name = parsed_cache.FileCache({"\udcff.yaml": ((1, 2, 3, 4), b"")})
    parsed_cache.write(str(cache_dir), str(root), odd_name)  # not UTF-8: not written
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory should be")
    parsed_cache.write(str(blocked), str(root), parsed_cache.FileCache())
    assert load_directory(root, cache_dir=str(blocked)) == expected
    assert load_directory(root, cache_dir=str(cache_dir)) == expected
    assert load_directory(root, cache_dir=str(cache_dir)) == expected  # warm


def test_what_cannot_be_encoded_is_parsed_again(tmp_path: Path) -> None:
    from resolver.catalog.model import Meta, Origin

    deep: Any = 0
    for _ in range(300):  # deeper than orjson writes
        deep = [deep]
    for objects in (
        [Meta("x", "", "n", {"d": deep}, Origin("f"))],
        [Meta("x", "", "n", {"d": 1 << 70})],
    ):
        blob = parsed_cache.pack_entry(objects, None)  # type: ignore[arg-type]
        assert parsed_cache.unpack_entry(blob) is None


def test_every_shared_test_catalog_round_trips(tmp_path: Path) -> None:
    from tests.catalog.helpers import DATA

    for root in sorted(DATA.iterdir()):
        cache_dir = str(tmp_path / root.name)
        cold, cold_body = load_served(root, use_cache=False)
        load_served(root, cache_dir=cache_dir)
        warm, warm_body = load_served(root, cache_dir=cache_dir)
        assert (warm, warm_body) == (cold, cold_body), root.name
        assert load_directory(root, cache_dir=cache_dir) == cold


def test_render_from_the_cache_is_byte_identical(tmp_path: Path) -> None:
    import io

    root = tmp_path / "cat"
    root.mkdir()
    (root / "catalog.yaml").write_text(CATALOG)
    outputs = []
    for _ in range(2):  # cold, then warm
        out = io.BytesIO()
        write_json(load_directory(root, cache_dir=str(tmp_path / "cache")), out)
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1]
