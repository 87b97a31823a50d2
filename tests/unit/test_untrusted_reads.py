"""Every file of a tree pivoter does not trust (catalog directories, bundle trees, the content
store, helm charts, templates) is opened by :mod:`resolver.safefiles` (or its catalog face,
:mod:`resolver.catalog.guard`): no other way of opening a file in ``resolver/`` or
``provisioners/``, except the few below, each for a file pivoter writes itself or is handed by
its operator, or a directory it opens to remove.

A FIFO in a bundle's ``manifests/`` once hung the format reader (``path.read_bytes()``) and a
link there was followed out of the bundle: the guard exists so that cannot happen again, and this
test keeps new code from going around it."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("resolver", "provisioners")

OPENERS = frozenset({"open", "fdopen", "FileIO", "mmap", "sendfile", "fromfile"})
"""Calls that open or map a file, whatever they are called on (``open``, ``os.open``,
``io.open``, ``Path.open``, ``tarfile.open``, ``gzip.open``, ``os.fdopen``, ``mmap.mmap``...)."""
PATH_READERS = frozenset({"read_bytes", "read_text"})
"""``Path`` methods that read a whole file; the guard's functions of the same name are called
on its module or imported bare, never as a method of a path."""
GUARD_MODULES = frozenset({"safefiles", "guard"})
SHUTIL_COPIES = frozenset({"copy", "copy2", "copyfile", "copyfileobj"})

ALLOWED: dict[str, str] = {
    # The guarded reader itself.
    "resolver/safefiles.py": "the one reader of files of untrusted trees",
    # Files pivoter writes itself, or that its operator names.
    "resolver/catalog/cache.py": "the parsed-catalog cache: pivoter's own file in its cache "
    "directory, written there atomically and read through a restricted unpickler",
    "resolver/catalog/sources/registry.py": "a CA bundle named on the command line (checked by "
    "pivoter/cli/flags.py) or written by pivoter itself from a Catalog's ConfigMap",
    "resolver/net/credentials.py": "a bearer token file its operator names (a service account "
    "token), opened non-blocking, checked regular and read with a bound",
    "provisioners/unpack.py": "creates each unpacked file itself (O_CREAT|O_EXCL|O_NOFOLLOW) "
    "and writes it",
    "provisioners/sources/image.py": "a layer blob pivoter downloaded into its own scratch "
    "directory and checked against its digest",
    # Not a file of a tree: a stream, or directories opened to be removed.
    "provisioners/tarheaders.py": "GuardedTarFile.open(fileobj=...) reads a stream the unpacker "
    "hands it, never a path",
    "provisioners/fstree.py": "opens directories (O_DIRECTORY|O_NOFOLLOW) to remove them by "
    "descriptor; never a file's content",
    # Developer tooling: the repository's own conformance fixtures (no command reads them).
    "resolver/conformance/runner.py": "the repository's conformance fixtures",
}


def file_opens(source: str) -> list[tuple[int, str]]:
    """(line, text) of every call in ``source`` that opens a file, strings and comments aside."""
    significant = [
        token
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type in (tokenize.NAME, tokenize.OP)
    ]
    lines = source.splitlines()
    found: list[tuple[int, str]] = []
    for index, token in enumerate(significant):
        following = significant[index + 1] if index + 1 < len(significant) else None
        if token.type != tokenize.NAME or following is None or following.string != "(":
            continue
        dotted = index >= 2 and significant[index - 1].string == "."
        owner = significant[index - 2].string if dotted else ""
        name = token.string
        if index >= 1 and significant[index - 1].string == "def":
            continue  # a definition, not a call
        opens = (
            name in OPENERS
            or (name in PATH_READERS and dotted and owner not in GUARD_MODULES)
            or (name in SHUTIL_COPIES and owner == "shutil")
        )
        if opens:
            number = token.start[0]
            found.append((number, lines[number - 1].strip()))
    return found


def scan(root: Path) -> dict[str, list[tuple[int, str]]]:
    """Every ``.py`` file of the packages under ``root`` that opens files, with the calls."""
    result: dict[str, list[tuple[int, str]]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            calls = file_opens(path.read_text(encoding="utf-8"))
            if calls:
                result[path.relative_to(root).as_posix()] = calls
    return result


def offenders(found: dict[str, list[tuple[int, str]]]) -> list[str]:
    return [
        f"{relpath}:{line}: {code}"
        for relpath, calls in found.items()
        if relpath not in ALLOWED
        for line, code in calls
    ]


def test_no_file_is_opened_outside_the_guarded_reader() -> None:
    found = scan(ROOT)
    bad = offenders(found)
    assert not bad, (
        "open files of catalogs, bundles, charts and the store with resolver.safefiles "
        "(read_bytes, read_text, open_file) or resolver.catalog.guard, not:\n" + "\n".join(bad)
    )
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"allowlisted files that no longer open anything (remove them): {stale}"


def test_the_scan_catches_planted_opens() -> None:
    planted = [
        "data = path.read_bytes()",
        "text = (root / name).read_text(encoding='utf-8')",
        "with open(path, 'rb') as f: pass",
        "fd = os.open(path, os.O_RDONLY)",
        "f = io.open(path)",
        "f = path.open('rb')",
        "f = os.fdopen(fd, 'rb')",
        "f = io.FileIO(path)",
        "m = mmap.mmap(fd, 0)",
        "shutil.copyfile(a, b)",
        "archive = tarfile.open(path)",
        "data = gzip.open(path).read()",
    ]
    for line in planted:
        assert file_opens(f"def f():\n    {line}\n"), line
    harmless = [
        "text = read_text(root, path)",
        "data = guard.read_bytes(root, path, walked=True)",
        "data = safefiles.read_bytes(root, path, max_bytes=1)",
        "with safefiles.open_file(root, path, max_bytes=1) as f: pass",
        "process = subprocess.Popen(argv)",
        "reply = urllib.request.urlopen(url)",
        "# path.read_bytes() would hang on a FIFO",
        '"""Docs mention open(path) and path.read_text()."""',
        "copy = dict(values).copy()",
        "path.write_text(data)",
        "def read_text(root, path): pass",
    ]
    for line in harmless:
        assert not file_opens(f"def f():\n    {line}\n"), line


def test_the_scan_catches_a_violation_planted_in_real_code(tmp_path: Path) -> None:
    """The scan of a package tree holding the real plain+v0 format, then the same with a plain
    read planted in it (what hung on a FIFO before the guard)."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    plain = tmp_path / "provisioners" / "formats" / "plain.py"
    plain.parent.mkdir()
    source = (ROOT / "provisioners" / "formats" / "plain.py").read_text(encoding="utf-8")
    plain.write_text(source, encoding="utf-8")
    assert not offenders(scan(tmp_path))
    plain.write_text(
        source + "\n\ndef _raw(path):\n    return path.read_bytes()\n", encoding="utf-8"
    )
    bad = offenders(scan(tmp_path))
    assert len(bad) == 1
    assert bad[0].startswith("provisioners/formats/plain.py:")
    assert bad[0].endswith("return path.read_bytes()")
