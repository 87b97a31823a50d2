"""The parsed-catalog cache: model objects of each file, reused while the file is unchanged.

One file per catalog root (named by a hash of its real path) under the cache directory (default
``~/.cache/pivoter/catalogs``, or ``$PIVOTER_CACHE/catalogs``). It maps each file's relative path
to its signature (size, mtime_ns, inode, device) and the objects decoded from it (with the file's
lines as catalogd serves them, when a server loaded it: :mod:`resolver.catalog.jsonl`), encoded
on their own (:func:`pack_entry`), so a reload re-reads only files that changed and the cache is
rewritten from those bytes without encoding anything again (the worker processes of
:mod:`resolver.catalog.parallel` send a file's objects back in that same form). Only files that
loaded without problems are cached. Called by :mod:`resolver.catalog.load`; a missing, stale,
damaged, planted or unwritable cache is ignored and rebuilt, never an error, never a hang, and
never costs more than reading what is there.

**The cache file is not trusted.** It sits in a directory anyone running as the user (or a CI
cache restored from elsewhere) can write to, so it is read as hostile input:

* It is read through :mod:`resolver.catalog.guard` (the catalog files' reader): a FIFO, a device,
  a link leaving the cache directory (``/dev/zero``), a directory or a FIFO where the cache
  directory should be, and a file over :data:`MAX_CACHE_BYTES` are refused without blocking.
  A file owned by another user, or that others may write to, is ignored: another local user could
  otherwise plant data (code-free, but not what the catalog holds); our own files are written
  0600.
* The format is JSON (parsed by orjson, a strict parser written for untrusted input), not a
  pickle: a pickle can share one object from many places (a 1 KiB DAG of lists that is 2^60
  elements once walked, which took ``render`` to 4 GB and SIGSEGV), loop, declare a memo index
  or a byte string of gigabytes in a few bytes (the unpickler allocates before it reads: 7 bytes
  took 2 GB and 12 s), or set attributes on the classes it may build (``Absent.__eq__ =
  Bundle``, for the rest of the process). JSON can do none of this: every value in it is spelled
  out in the file, so what is built is linear in the file's size, and each entry's bytes are
  bounded by the size of the catalog file they stand for (:func:`entry_budget`) before it is
  parsed.
* Every entry is checked exhaustively against the model before use: the codec is generated from
  the dataclasses' annotations (:func:`_codec`), so every field of every class is checked (a
  field added later too; a field of a type the codec does not know fails at import), and a model
  change changes :data:`_SCHEMA`, which invalidates older files. Values typed ``JSON`` are what
  orjson builds (plain JSON: no NaN, no lone surrogates, integers of at most 64 bits); their
  nesting is bounded by what orjson can write again (so whatever loads can be rendered and
  served). Served lines must add up (sizes, CRC range); a CRC-32 of each entry catches accidental
  damage.

Limit: a file written by the user's own account with well-formed but wrong data (say, another
catalog's objects under this catalog's signatures) is used as it is; whoever can do that can
change the catalog or pivoter itself.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import operator
import os
import stat
import tempfile
import threading
import types
import typing
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from resolver.catalog import model
from resolver.catalog.decode import CatalogObject
from resolver.catalog.guard import RefusedFile, inspect, read_bytes, real_path
from resolver.catalog.jsonl import FileLines

__all__ = [
    "MAX_CACHE_BYTES",
    "FileCache",
    "FileEntry",
    "Signature",
    "default_cache_dir",
    "entry_budget",
    "pack_entry",
    "read",
    "unpack_entry",
    "write",
]

_FORMAT = 6  # bump when the encoding changes (model changes change _SCHEMA by themselves)

MAX_CACHE_BYTES = 1 << 30
"""Largest cache file read or written (a cache is about 1.5 times its catalog's files, so this
holds catalogs of 600 MB); a larger catalog is simply not cached. The file is read whole: twice
its size in memory while it is split into entries."""

Signature = tuple[int, int, int, int]

FileEntry = tuple[list[CatalogObject], FileLines | None]
"""What the cache holds of one file: its decoded objects, and its served lines when known."""

_MAGIC = b"pivoter parsed-catalog cache\n"
_ENTRY_RATIO = 8
_ENTRY_SLACK = 64 << 10


def default_cache_dir() -> str:
    """Return the directory parsed catalogs are cached in by default."""
    base = os.environ.get("PIVOTER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pivoter"
    )
    return os.path.join(base, "catalogs")


def entry_budget(file_size: int) -> int:
    """The most bytes the entry of a catalog file of ``file_size`` bytes may take.

    A real entry is about the size of its file (at most 1.6 times for the shared catalogs: the
    objects, plus the served lines compressed); eight times that, plus 64 KiB for small files
    with long paths, bounds what a planted entry can make the loader build by what parsing the
    file itself would cost. A larger entry (a YAML file whose aliases expand a lot) is not used:
    that file is parsed each time.
    """
    return _ENTRY_RATIO * max(file_size, 0) + _ENTRY_SLACK


@dataclass(slots=True)
class FileCache:
    """Encoded objects of the files of one catalog root (:func:`pack_entry`), by relative path."""

    files: dict[str, tuple[Signature, bytes]] = field(default_factory=dict)

    def get(self, relpath: str, signature: Signature, *, lines: bool = False) -> FileEntry | None:
        """Return the cached entry of ``relpath`` if it still has ``signature`` (and is sound);
        with ``lines``, only an entry that holds the file's served lines."""
        hit = self.files.get(relpath)
        if hit is None or hit[0] != signature or len(hit[1]) > entry_budget(signature[0]):
            return None
        entry = unpack_entry(hit[1])
        if entry is None or (lines and entry[1] is None):
            return None
        return entry


def pack_entry(objects: list[CatalogObject], lines: FileLines | None) -> bytes:
    """Encode one file's decoded objects (and served lines, :mod:`resolver.catalog.jsonl`).

    The entry is one line of JSON, then the bytes values it names by length (the compressed
    lines), in order. A value JSON cannot hold (it never comes out of :mod:`resolver.safedata`)
    gives an empty entry, which :func:`unpack_entry` refuses: the file is parsed again next time.
    """
    spill = _spill.begin(None)
    try:
        text = orjson.dumps((_ENTRY.encode or _same)((objects, lines)))
    except (AttributeError, LookupError, TypeError, ValueError):  # not the model's shape
        return b""
    finally:
        _spill.end()
    return b"".join([text, b"\n", *spill.out])


def unpack_entry(blob: bytes) -> FileEntry | None:
    """Decode :func:`pack_entry`'s bytes, checked against the model; None if unsound."""
    view = memoryview(blob)
    cut = blob.find(b"\n")  # orjson writes no raw newline
    if cut < 0:
        return None
    spill = _spill.begin(view[cut + 1 :])
    try:
        raw = orjson.loads(view[:cut])
        # orjson reads 1024 levels but writes only 254: what it cannot write again could not be
        # rendered or served either. Every value sits deeper in an entry than in any output.
        orjson.dumps(raw)
        objects, lines = _ENTRY.decode(raw)
    except (TypeError, ValueError):  # orjson's errors, _Unsound
        return None
    finally:
        _spill.end()
    if spill.taken != len(spill.data):  # bytes that no value named
        return None
    if lines is not None and not _lines_add_up(lines):
        return None
    return objects, lines


def _lines_add_up(lines: FileLines) -> bool:
    """Do the served lines' numbers agree (the line lengths add up to the size, the CRC is one)?
    ``jsonl.join`` and the server compute offsets and checksums from them."""
    lengths = [meta[3] for meta in lines.metas]
    return 0 <= lines.crc < 1 << 32 and min(lengths, default=0) >= 0 and sum(lengths) == lines.size


def _cache_path(cache_dir: str, root: str) -> str:
    return os.path.join(cache_dir, f"{_digest(root)}.cache")


def _digest(root: str) -> str:
    return hashlib.sha256(real_path(root).encode("utf-8", "surrogateescape")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class _Stored:
    """Where one file's entry is in the cache file, and what it was made from."""

    relpath: str
    signature: tuple[int, int, int, int]
    length: int
    crc: int


@dataclass(frozen=True, slots=True)
class _Header:
    """The first line after the magic: the format, the model's shape, the root, the entries."""

    format: int
    schema: str
    root: str
    files: tuple[_Stored, ...]


def read(cache_dir: str, root: str) -> FileCache:
    """Read the cache of ``root``; an absent or unusable cache reads as empty."""
    try:
        real_root = real_path(root)
        data = _read_own_file(cache_dir, _cache_path(cache_dir, root))
    except OSError:  # absent, refused by the guard, not ours
        return FileCache()
    return FileCache(_entries(data, real_root))


def _read_own_file(cache_dir: str, path: str) -> bytes:
    """Read the cache file through the catalog files' guard, if it is ours and only ours."""
    what = "parsed-catalog cache"
    st = inspect(cache_dir, path, max_bytes=MAX_CACHE_BYTES, what=what)
    if st.st_uid != os.geteuid():
        raise RefusedFile("owned by another user: ignored")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise RefusedFile("writable by other users: ignored")
    # The same file, opened without following links or blocking: its owner is the one checked.
    return read_bytes(
        cache_dir, path, max_bytes=MAX_CACHE_BYTES, what=what, expect=(st.st_dev, st.st_ino)
    )


def _entries(data: bytes, real_root: str) -> dict[str, tuple[Signature, bytes]]:
    """The entries of a cache file's bytes (those whose CRC matches); none if it is unsound."""
    if not data.startswith(_MAGIC):
        return {}
    end = data.find(b"\n", len(_MAGIC))
    if end < 0:
        return {}
    view = memoryview(data)
    try:
        header: _Header = _HEADER.decode(orjson.loads(view[len(_MAGIC) : end]))
    except (TypeError, ValueError):
        return {}
    if header.format != _FORMAT or header.schema != _SCHEMA or header.root != real_root:
        return {}
    files: dict[str, tuple[Signature, bytes]] = {}
    offset = end + 1
    for stored in header.files:
        if stored.length < 0 or offset + stored.length > len(data):
            return {}
        blob = view[offset : offset + stored.length]
        offset += stored.length
        if zlib.crc32(blob) == stored.crc:  # else damaged: that file is parsed again
            files[stored.relpath] = (stored.signature, bytes(blob))
    return files if offset == len(data) else {}


def write(cache_dir: str, root: str, cache: FileCache) -> None:
    """Replace the cache of ``root`` atomically; failures only cost speed, so they are ignored."""
    try:
        path = _cache_path(cache_dir, root)
        stored = tuple(
            _Stored(relpath, signature, len(blob), zlib.crc32(blob))
            for relpath, (signature, blob) in cache.files.items()
        )
        header = _Header(_FORMAT, _SCHEMA, real_path(root), stored)
        text = orjson.dumps((_HEADER.encode or _same)(header))
    except (OSError, TypeError, ValueError):  # a root or path JSON cannot hold (not UTF-8)
        return
    if len(_MAGIC) + len(text) + 1 + sum(s.length for s in stored) > MAX_CACHE_BYTES:
        return
    try:
        os.makedirs(cache_dir, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=".tmp-", suffix=".cache")  # mode 0600
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC)
            f.write(text)
            f.write(b"\n")
            for _, blob in cache.files.values():
                f.write(blob)
        os.replace(tmp, path)
    except OSError:  # disk full, a directory where the file should be: only speed is lost
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return
    with contextlib.suppress(OSError):  # the pickle earlier versions wrote, never read now
        os.unlink(path.removesuffix(".cache") + ".pickle")


# -- the codec, generated from the annotations -------------------------------------------------


class _Unsound(ValueError):
    """Decoded JSON that does not have the shape the model gives it."""


_INT_MIN = -(1 << 63)
_INT_END = 1 << 64
"""Integers are 64-bit, signed or not (an inode number may pass 2^63)."""


@dataclass(frozen=True, slots=True)
class _Codec:
    """How one type is written as JSON and read back, checked.

    ``encode`` is None when the value is written as it is (orjson writes tuples as arrays).
    ``kind`` lets a dataclass check its ``str``, ``int`` and ``JSON`` fields inline, without a
    call per field (a warm load decodes hundreds of thousands of objects). ``shape`` describes the
    type, for :data:`_SCHEMA`.
    """

    kind: str  # "str", "int", "json" (a JSON field: [value], or [] for ABSENT), "optional", "other"
    encode: Callable[[Any], Any] | None
    decode: Callable[[Any], Any]
    shape: str
    inner: Callable[[Any], Any] | None = None
    """For ``optional``: the decoder of the value when it is not null."""


def _same(value: Any) -> Any:
    return value


def _decode_str(value: Any) -> str:
    if type(value) is not str:
        raise _Unsound("expected a string")
    return value


def _decode_int(value: Any) -> int:
    if type(value) is not int or not _INT_MIN <= value < _INT_END:
        raise _Unsound("expected a 64-bit integer")
    return value


class _Spilled:
    """The bytes values of one entry, kept out of its JSON: collected while encoding (``out``);
    handed out in order, each once, while decoding (``data``, ``taken``)."""

    __slots__ = ("data", "out", "taken")

    def __init__(self, data: memoryview | None) -> None:
        self.out: list[bytes] = []
        self.data = data if data is not None else memoryview(b"")
        self.taken = 0


class _Spill(threading.local):
    """The :class:`_Spilled` of the entry this thread is encoding or decoding."""

    current: _Spilled | None = None

    def begin(self, data: memoryview | None) -> _Spilled:
        self.current = _Spilled(data)
        return self.current

    def end(self) -> None:
        self.current = None


_spill = _Spill()


def _encode_bytes(value: bytes) -> int:
    spilled = _spill.current
    if spilled is None:
        raise TypeError("bytes outside an entry")
    spilled.out.append(value)
    return len(value)


def _decode_bytes(value: Any) -> bytes:
    spilled = _spill.current
    if spilled is None or type(value) is not int or value < 0:
        raise _Unsound("expected the length of a byte string")
    start = spilled.taken
    if start + value > len(spilled.data):
        raise _Unsound("a byte string runs past the entry")
    spilled.taken = start + value
    return bytes(spilled.data[start : start + value])


def _encode_json_field(value: Any) -> list[Any]:
    return [] if value is model.ABSENT else [value]


def _decode_json_field(value: Any) -> Any:
    if type(value) is not list or len(value) > 1:
        raise _Unsound("expected a JSON value")
    return value[0] if value else model.ABSENT


def _decode_json_object(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Unsound("expected a JSON object")
    return value


_STR = _Codec("str", None, _decode_str, "str")
_INT = _Codec("int", None, _decode_int, "int")
_BYTES = _Codec("other", _encode_bytes, _decode_bytes, "bytes")
_JSON_FIELD = _Codec("json", _encode_json_field, _decode_json_field, "json|absent")
_JSON = _Codec("other", None, _same, "json")  # inside a JSON mapping: what orjson built
_JSON_OBJECT = _Codec("other", None, _decode_json_object, "map[str,json]")
_SCALARS = {str: _STR, int: _INT, bytes: _BYTES}


def _codec(hint: Any, *, is_field: bool = False) -> _Codec:
    """The codec of the type ``hint``; a TypeError for a type the cache does not know.

    ``is_field``: ``hint`` is a dataclass field's own type (``JSON`` there may be ABSENT).
    """
    if hint is Any:
        return _JSON_FIELD if is_field else _JSON
    scalar = _SCALARS.get(hint)
    if scalar is not None:
        return scalar
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_codec(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is types.UnionType or origin is typing.Union:
        options = tuple(arg for arg in args if arg is not type(None))
        if len(options) < len(args):
            return _optional_codec(_codec(functools.reduce(operator.or_, options)))
        return _tagged_codec(options)
    codec = _container_codec(origin, args)
    if codec is None:
        raise TypeError(f"the parsed-catalog cache cannot hold {hint!r}: teach it in {__name__}")
    return codec


def _container_codec(origin: Any, args: tuple[Any, ...]) -> _Codec | None:
    """``tuple[X, ...]``, ``tuple[A, B]``, ``list[X]``, ``Mapping[str, JSON]``; else None."""
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _sequence_codec(_codec(args[0]), as_tuple=True)
    if origin is tuple and args:
        return _fixed_tuple_codec(tuple(_codec(arg) for arg in args))
    if origin is list and len(args) == 1:
        return _sequence_codec(_codec(args[0]), as_tuple=False)
    if origin in (Mapping, dict) and args == (str, Any):
        return _JSON_OBJECT
    return None


def _sequence_codec(item: _Codec, *, as_tuple: bool) -> _Codec:
    encode_item, decode_item = item.encode, item.decode

    def decode(value: Any) -> Any:
        if type(value) is not list:
            raise _Unsound("expected an array")
        return tuple(map(decode_item, value)) if as_tuple else list(map(decode_item, value))

    encode = None if encode_item is None else functools.partial(_encode_each, encode_item)
    shape = f"{'tuple' if as_tuple else 'list'}[{item.shape}]"
    return _Codec("other", encode, decode, shape)


def _encode_each(encode_item: Callable[[Any], Any], value: Any) -> list[Any]:
    return [encode_item(x) for x in value]


def _fixed_tuple_codec(items: tuple[_Codec, ...]) -> _Codec:
    count = len(items)
    decoders = tuple(item.decode for item in items)
    encoders = tuple(item.encode or _same for item in items)

    def decode(value: Any) -> tuple[Any, ...]:
        if type(value) is not list or len(value) != count:
            raise _Unsound(f"expected an array of {count}")
        return tuple([d(x) for d, x in zip(decoders, value, strict=True)])

    def encode(value: Any) -> list[Any]:
        return [e(x) for e, x in zip(encoders, value, strict=True)]

    plain = all(item.encode is None for item in items)
    shape = "(" + ",".join(item.shape for item in items) + ")"
    return _Codec("other", None if plain else encode, decode, shape)


def _optional_codec(inner: _Codec) -> _Codec:
    """``X | None``: null, or X."""
    encode_inner, decode_inner = inner.encode or _same, inner.decode

    def decode(value: Any) -> Any:
        return None if value is None else decode_inner(value)

    def encode(value: Any) -> Any:
        return None if value is None else encode_inner(value)

    plain = inner.encode is None
    return _Codec("optional", None if plain else encode, decode, f"{inner.shape}?", decode_inner)


def _tagged_codec(options: tuple[Any, ...]) -> _Codec:
    """A union of dataclasses: ``[class name, fields]``."""
    if not all(isinstance(arg, type) and dataclasses.is_dataclass(arg) for arg in options):
        raise TypeError(f"the parsed-catalog cache cannot hold the union of {options!r}")
    by_name = {arg.__name__: _codec(arg) for arg in options}
    decoders = {name: codec.decode for name, codec in by_name.items()}
    encoders = {arg: by_name[arg.__name__].encode or _same for arg in options}

    def decode(value: Any) -> Any:
        if type(value) is not list or len(value) != 2 or type(value[0]) is not str:
            raise _Unsound("expected [class, fields]")
        decode_class = decoders.get(value[0])
        if decode_class is None:
            raise _Unsound("unknown class")
        return decode_class(value[1])

    def encode(value: Any) -> list[Any]:
        encode_class = encoders.get(type(value))
        if encode_class is None:
            raise TypeError(f"{type(value).__name__} is not a class of this union")
        return [type(value).__name__, encode_class(value)]

    shape = "|".join(codec.shape for codec in by_name.values())
    return _Codec("other", encode, decode, f"union[{shape}]")


_DATACLASSES: dict[type, _Codec] = {}

# One line per field kind in a dataclass's generated decoder (``{f}`` is the field's variable).
_FIELD_CHECKS = {
    "str": (
        "    if type({f}) is not str:\n        raise _Unsound({where!r} + ': expected a string')\n"
    ),
    "int": (
        "    if type({f}) is not int or not _INT_MIN <= {f} < _INT_END:\n"
        "        raise _Unsound({where!r} + ': expected a 64-bit integer')\n"
    ),
    "json": (
        "    if type({f}) is not list or len({f}) > 1:\n"
        "        raise _Unsound({where!r} + ': expected a JSON value')\n"
        "    {f} = {f}[0] if {f} else _ABSENT\n"
    ),
    "optional": "    if {f} is not None:\n        {f} = {d}({f})\n",
    "other": "    {f} = {d}({f})\n",
}


def _dataclass_codec(cls: type) -> _Codec:
    """A dataclass as the array of its fields, each with the codec of its annotation.

    The decoder is generated (as :mod:`dataclasses` generates ``__init__``): one function per
    class that checks each field inline, half the cost of a loop over the fields, which matters
    for the hundreds of thousands of objects of a warm load.
    """
    known = _DATACLASSES.get(cls)
    if known is not None:
        return known
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    if not all(f.init for f in fields):
        raise TypeError(f"the parsed-catalog cache cannot hold {cls!r}: a field is not in __init__")
    codecs = tuple(_codec(hints[f.name], is_field=True) for f in fields)
    encoders = tuple(c.encode for c in codecs)
    values = operator.attrgetter(*(f.name for f in fields))
    count = len(codecs)

    def encode(obj: Any) -> list[Any]:
        got = values(obj)
        if count == 1:
            got = (got,)
        return [x if e is None else e(x) for e, x in zip(encoders, got, strict=True)]

    shape = ",".join(f"{f.name}:{c.shape}" for f, c in zip(fields, codecs, strict=True))
    codec = _Codec(
        "other", encode, _generated_decoder(cls, fields, codecs), f"{cls.__name__}({shape})"
    )
    _DATACLASSES[cls] = codec
    return codec


def _generated_decoder(
    cls: type, fields: tuple[dataclasses.Field[Any], ...], codecs: tuple[_Codec, ...]
) -> Callable[[Any], Any]:
    names = [f"f{i}" for i in range(len(fields))]
    namespace: dict[str, Any] = {
        "_Unsound": _Unsound,
        "_ABSENT": model.ABSENT,
        "_INT_MIN": _INT_MIN,
        "_INT_END": _INT_END,
        "cls": cls,
    }
    lines = [
        "def decode(value):\n",
        f"    if type(value) is not list or len(value) != {len(fields)}:\n",
        f"        raise _Unsound({cls.__name__ + ': expected its fields'!r})\n",
        f"    {''.join(name + ', ' for name in names)}= value\n" if names else "",
    ]
    for name, f, codec in zip(names, fields, codecs, strict=True):
        decoder = f"d_{name}"
        if codec.kind == "optional":
            namespace[decoder] = codec.inner
        elif codec.kind == "other":
            namespace[decoder] = codec.decode
        lines.append(
            _FIELD_CHECKS[codec.kind].format(f=name, d=decoder, where=f"{cls.__name__}.{f.name}")
        )
    lines.append(f"    return cls({', '.join(names)})\n")
    exec("".join(lines), namespace)  # our own source, built from the annotations alone
    decode: Callable[[Any], Any] = namespace["decode"]
    return decode


_ENTRY = _codec(FileEntry)
_HEADER = _codec(_Header)
_SCHEMA = hashlib.sha256(f"{_ENTRY.shape}\n{_HEADER.shape}".encode()).hexdigest()[:16]
"""The shape of the model and the header: a cache written for another shape is not read."""
