"""Hostile tar headers (CVE-2024-6232 PAX ReDoS, oversized and chained extension headers, broken
sparse maps, negative sizes) are refused fast by provisioners.tarheaders, whatever the Python."""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from provisioners.tarheaders import (
    MAX_HEADER_CHAIN,
    MAX_PAX_HEADER_BYTES,
    MAX_PAX_RECORDS,
    parse_pax_records,
)
from provisioners.unpack import (
    CorruptArchiveError,
    UnsafeHeaderError,
    UnsafePathError,
    unpack_tar,
)

BLOCK = 512
END = b"\0" * 1024


def header(name: str, kind: bytes, size: int) -> bytes:
    """A raw ustar header (no extension headers of its own)."""
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % BLOCK)


def record(keyword: bytes, value: bytes) -> bytes:
    """One well-formed PAX record: its length prefix counts the whole record."""
    body = b" " + keyword + b"=" + value + b"\n"
    length = len(body) + 1
    while len(str(length)) + len(body) != length:
        length += 1
    return str(length).encode() + body


def pax(body: bytes, kind: bytes = tarfile.XHDTYPE) -> bytes:
    return header("PaxHeader", kind, len(body)) + padded(body)


def regular(name: str = "manifests/a.yaml", data: bytes = b"a: 1\n") -> bytes:
    return header(name, tarfile.REGTYPE, len(data)) + padded(data)


def _refused(archive: bytes, root: Path, match: str, *, clean: bool = True) -> None:
    with pytest.raises(UnsafeHeaderError, match=match) as caught:
        unpack_tar(io.BytesIO(archive), root)
    assert "\n" not in str(caught.value)
    if clean:
        assert not root.exists() or not any(root.iterdir())


# -- CVE-2024-6232: run in a subprocess with a timeout so a regression cannot hang the suite -----

_RUN = textwrap.dedent(
    """
    import io, json, sys, time
    from pathlib import Path
    from provisioners.unpack import unpack_tar
    archive = Path(sys.argv[1]).read_bytes()
    start = time.process_time()
    try:
        stats = unpack_tar(io.BytesIO(archive), Path(sys.argv[2]))
        outcome = {"files": stats.files}
    except Exception as exc:
        outcome = {"error": type(exc).__name__, "message": str(exc)}
    outcome["seconds"] = time.process_time() - start
    print(json.dumps(outcome))
    """
)


def _unpack_in_subprocess(tmp_path: Path, archive: bytes) -> dict[str, object]:
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(archive)
    done = subprocess.run(
        [sys.executable, "-c", _RUN, str(path), str(tmp_path / "root")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    outcome: dict[str, object] = json.loads(done.stdout)
    return outcome


def test_redos_pax_header_from_a_tiny_bundle_is_refused_fast(tmp_path: Path) -> None:
    # 4 MiB of digits where a PAX record is expected: a few KiB once gzipped; hours of CPU for the
    # backtracking regular expressions of tarfile before 3.11.10.
    archive = gzip.compress(pax(b"1" * (4 << 20)) + regular() + END, mtime=0)
    assert len(archive) < 8192
    outcome = _unpack_in_subprocess(tmp_path, archive)
    assert outcome["error"] == "UnsafeHeaderError", outcome
    assert "larger than the 65536 bytes allowed" in str(outcome["message"])
    assert float(str(outcome["seconds"])) < 2.0


_LONG_DIGITS = record(b"comment", b"1" * 60_000)  # well-formed and under the size limit


def test_well_formed_pax_record_with_a_long_digit_run_parses_in_linear_time(
    tmp_path: Path,
) -> None:
    assert len(_LONG_DIGITS) < MAX_PAX_HEADER_BYTES
    archive = gzip.compress(pax(_LONG_DIGITS) + regular() + END, mtime=0)
    outcome = _unpack_in_subprocess(tmp_path, archive)
    assert outcome.get("files") == 1, outcome
    assert float(str(outcome["seconds"])) < 1.0
    assert (tmp_path / "root" / "manifests" / "a.yaml").read_text() == "a: 1\n"


@pytest.mark.skipif(
    sys.version_info >= (3, 12, 6) or (3, 11, 10) <= sys.version_info < (3, 12),
    reason="this interpreter's own tarfile has the CVE-2024-6232 fix",
)
def test_the_same_record_stalls_this_interpreters_own_tarfile(tmp_path: Path) -> None:
    """Proof that the input above is the attack: stock tarfile needs seconds where ours needs ms."""
    path = tmp_path / "bundle.tar"
    path.write_bytes(pax(_LONG_DIGITS) + regular() + END)
    stock = f"import tarfile; list(tarfile.open({str(path)!r}, mode='r|'))"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", stock], timeout=1.0, check=True)


# -- malformed and oversized extension headers ---------------------------------------------------


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"1" * 60_000, "does not start with its length"),
        (b"abc path=x\n", "does not start with its length"),
        (b"0 path=x\n", "wrong length"),
        (b"99 path=x\n", "wrong length"),
        (b"12 path=xyz\n" + b"3 a", "wrong length"),
        (b"11 pathxyz\n", "no keyword=value"),
        (b"9 path=xy\n", "wrong length"),  # the length does not land on the newline
        (b"".join(record(b"k%d" % i, b"v") for i in range(MAX_PAX_RECORDS + 1)), "records"),
    ],
)
def test_malformed_pax_headers_are_refused(root: Path, body: bytes, match: str) -> None:
    _refused(pax(body) + regular() + END, root, match)


def test_a_pax_header_larger_than_the_limit_is_refused_before_it_is_read(root: Path) -> None:
    # Declares 1 GiB and sends nothing: the size alone decides, no read, no "truncated".
    _refused(header("PaxHeader", tarfile.XHDTYPE, 1 << 30) + END, root, "1073741824 bytes")


def test_a_gnu_long_name_larger_than_the_limit_is_refused(root: Path) -> None:
    _refused(header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 1 << 30) + END, root, "long name")


def test_a_long_gnu_name_under_the_header_limit_still_meets_the_path_limit(root: Path) -> None:
    name = b"a/" * 3000 + b"f\0"
    archive = header("././@LongLink", tarfile.GNUTYPE_LONGNAME, len(name)) + padded(name)
    with pytest.raises(UnsafePathError, match="max_path_bytes"):
        unpack_tar(io.BytesIO(archive + regular("placeholder") + END), root)


@pytest.mark.parametrize(
    "one",
    [
        pax(record(b"comment", b"x")),
        pax(record(b"comment", b"x"), tarfile.XGLTYPE),
        header("././@LongLink", tarfile.GNUTYPE_LONGNAME, 2) + padded(b"a\0"),
    ],
    ids=["pax", "global", "gnu-longname"],
)
def test_long_chains_of_extension_headers_are_refused_not_recursed(root: Path, one: bytes) -> None:
    # Stock tarfile recurses once per header: 2000 of them raise RecursionError.
    _refused(one * 2000 + regular() + END, root, "extension headers in a row")


def test_a_few_chained_extension_headers_are_fine(root: Path) -> None:
    chain = pax(record(b"comment", b"commit"), tarfile.XGLTYPE) + pax(record(b"path", b"b.yaml"))
    assert MAX_HEADER_CHAIN >= 2
    unpack_tar(io.BytesIO(chain + regular("ignored") + END), root)
    assert (root / "b.yaml").read_text() == "a: 1\n"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (record(b"size", b"-1024"), "pax size '-1024'"),  # stock: moves the stream backwards
        (record(b"size", b"9" * 5000), "pax size"),
        (record(b"GNU.sparse.size", b"abc"), "GNU.sparse.size"),  # stock: ValueError
        (record(b"GNU.sparse.realsize", b"+5"), "GNU.sparse.realsize"),
        (
            record(b"GNU.sparse.map", b"0,10,x") + record(b"GNU.sparse.realsize", b"10"),
            "GNU.sparse.map",
        ),
    ],
)
def test_bad_numbers_in_pax_headers_are_refused(root: Path, body: bytes, match: str) -> None:
    _refused(pax(body) + regular() + END, root, match)


def test_truncated_gnu_sparse_1_0_map_is_refused(root: Path) -> None:
    body = (
        record(b"GNU.sparse.major", b"1")
        + record(b"GNU.sparse.minor", b"0")
        + record(b"GNU.sparse.realsize", b"10")
    )
    # The map promises 99999 segments and the archive ends (stock: ValueError).
    archive = pax(body) + header("f", tarfile.REGTYPE, 512) + padded(b"99999\n")
    _refused(archive, root, "sparse")


def _checksummed(block: bytearray) -> bytes:
    block[148:156] = b"        "
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def test_truncated_old_gnu_sparse_header_is_refused(root: Path) -> None:
    info = tarfile.TarInfo("s")
    info.type = tarfile.GNUTYPE_SPARSE
    block = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    block[482] = (
        1  # "extended": more sparse headers follow, but the archive ends (stock: IndexError)
    )
    _refused(_checksummed(block), root, "ends inside a GNU sparse header")


def test_negative_base256_size_is_refused(root: Path) -> None:
    info = tarfile.TarInfo("n")
    block = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    block[124:136] = b"\xff" * 12  # base-256 -1
    _refused(_checksummed(block) + END, root, "negative size")


def test_global_headers_cannot_pile_up_keys(root: Path) -> None:
    many = b"".join(
        pax(b"".join(record(b"k%d-%d" % (n, i), b"v") for i in range(100)), tarfile.XGLTYPE)
        + regular(f"f{n}")
        for n in range(3)
    )
    _refused(many + END, root, "global pax headers", clean=False)


def test_errors_are_corrupt_archive_errors_for_callers() -> None:
    assert issubclass(UnsafeHeaderError, CorruptArchiveError)


# -- real archives keep working -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_archives_from_tarfile_with_long_names_and_links_unpack(root: Path, fmt: int) -> None:
    deep = "/".join(["directory-with-a-long-name"] * 8) if fmt != tarfile.USTAR_FORMAT else "d/e"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        info = tarfile.TarInfo(f"{deep}/file.yaml")
        info.size = 5
        info.mtime = 1_700_000_000
        archive.addfile(info, io.BytesIO(b"a: 1\n"))
        link = tarfile.TarInfo(f"{deep}/link.yaml")
        link.type = tarfile.SYMTYPE
        link.linkname = "file.yaml"
        archive.addfile(link)
    unpack_tar(io.BytesIO(gzip.compress(buffer.getvalue())), root)
    assert (root / deep / "link.yaml").read_text() == "a: 1\n"


def test_archives_from_gnu_tar_and_git_archive_headers_unpack(tmp_path: Path, root: Path) -> None:
    source = tmp_path / "src"
    deep = source / ("n" * 120) / ("m" * 120)
    deep.mkdir(parents=True)
    (deep / "f.yaml").write_text("a: 1\n")
    for fmt in ("pax", "gnu", "posix"):
        out = tmp_path / f"{fmt}.tar"
        subprocess.run(
            ["tar", f"--format={fmt}", "-cf", str(out), "-C", str(source), "."], check=True
        )
        target = root / fmt
        unpack_tar(io.BytesIO(out.read_bytes()), target)
        assert (target / ("n" * 120) / ("m" * 120) / "f.yaml").read_text() == "a: 1\n"
    # git archive starts with a global header holding the commit id.
    globalled = pax(record(b"comment", b"0" * 40), tarfile.XGLTYPE) + regular() + END
    unpack_tar(io.BytesIO(globalled), root / "git")
    assert (root / "git" / "manifests" / "a.yaml").exists()


def test_parse_pax_records_splits_by_length() -> None:
    body = record(b"path", b"a=b c\nd") + record(b"mtime", b"1.5") + b"\0" * 20
    assert parse_pax_records(body) == [(b"path", b"a=b c\nd"), (b"mtime", b"1.5")]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def test_no_other_code_opens_tar_archives() -> None:
    """Every tar reader goes through provisioners.tarheaders (via provisioners.unpack)."""
    repo = Path(__file__).resolve().parents[2]
    readers = (
        "tarfile.open(",
        "TarFile(",
        "TarFile.open(",
        "tarfile.TarFile.",
        "shutil.unpack_archive",
    )
    offenders = [
        f"{path.relative_to(repo)}: {needle}"
        for package in ("pivoter", "resolver", "provisioners")
        for path in sorted((repo / package).rglob("*.py"))
        if path.name != "tarheaders.py"
        for needle in readers
        if needle in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
