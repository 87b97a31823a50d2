"""Every file a catalog directory load opens passes one guard: catalog files, ``.indexignore``,
``catalog test`` templates and expectations, the catalog server's JSONL.

Hostile inputs: FIFOs (an ``open`` that never returns), links to endless devices, links out of the
catalog, huge and pathological ignore files, deep trees. Each must give a clear one-line problem,
fast; the cases that could hang run in a subprocess with a timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resolver.catalog import guard
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.guard import RefusedFile, read_bytes
from resolver.catalog.ignore import (
    MAX_IGNORE_BYTES,
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    MAX_TOTAL_PATTERNS,
)
from resolver.catalog.load import load_directory
from resolver.catalog.walk import list_catalog_files
from tests.catalog.test_bad_input import GOOD
from tests.clirun import pivoter

HANG_TIMEOUT = 30  # seconds: a load that takes longer is hanging


def _good(root: Path) -> Path:
    (root / "good").mkdir(parents=True, exist_ok=True)
    (root / "good" / "catalog.yaml").write_text(GOOD)
    return root


def _pivoter(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a subprocess: a hang fails the test (TimeoutExpired) instead of blocking."""
    cache = str(Path(args[-1]).parent / "cache")
    return pivoter(*args, env={**os.environ, "PIVOTER_CACHE": cache}, timeout=HANG_TIMEOUT)


def _one_line_error(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    text = result.stdout + result.stderr
    for needle in needles:
        assert needle in text, text


def _problems(root: Path) -> dict[str, str]:
    started = time.monotonic()
    with pytest.raises(CatalogLoadError) as exc:
        load_directory(root, use_cache=False)
    assert time.monotonic() - started < 5
    return {str(p.origin.path if p.origin else ""): p.message for p in exc.value.problems}


# ------------------------------------------------------------------ hangs: in a subprocess


@pytest.mark.parametrize("name", ["extra.yaml", ".indexignore", "sub/.indexignore"])
def test_a_fifo_is_refused_not_opened(tmp_path: Path, name: str) -> None:
    root = _good(tmp_path / "cat")
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(root / name)
    result = _pivoter("catalog", "validate", str(root))
    assert result.returncode == 1  # an I/O problem
    _one_line_error(result, name, "FIFO")


def test_a_fifo_template_and_expectations_do_not_hang_catalog_test(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    root.mkdir()
    os.mkfifo(root / "template.yaml")
    result = _pivoter("catalog", "test", str(root))
    assert result.returncode == 1  # a file that cannot be read, named
    _one_line_error(result, "template.yaml: not a regular file (a FIFO): not read")

    catalog = _good(tmp_path / "cat")
    os.mkfifo(tmp_path / "expect.yaml")
    result = _pivoter("catalog", "test", str(catalog), "--expect", str(tmp_path / "expect.yaml"))
    assert result.returncode != 0
    _one_line_error(result, "expect.yaml")
    # The reader itself, whatever the command line checks first.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from resolver.channeltest.expectations import ExpectationError, load_expectations\n"
            "try:\n"
            "    load_expectations(sys.argv[1])\n"
            "except ExpectationError as err:\n"
            "    print(err)\n",
            str(tmp_path / "expect.yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_TIMEOUT,
        check=True,
    )
    assert "FIFO" in loaded.stdout


def test_catalog_serve_refuses_a_directory_with_a_fifo_at_once(tmp_path: Path) -> None:
    root = _good(tmp_path / "cat")
    os.mkfifo(root / "pipe.json")
    result = _pivoter("catalog", "serve", "--grpc-port", "-1", "--http-port", "0", str(root))
    assert result.returncode == 3
    _one_line_error(result, "cannot serve", "pipe.json", "FIFO")


# ------------------------------------------------------------------ endless devices, escapes


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("name", ["big.yaml", ".indexignore"])
def test_a_link_to_an_endless_device_is_refused(tmp_path: Path, device: str, name: str) -> None:
    root = _good(tmp_path)
    os.symlink(device, root / "good" / name)
    problems = _problems(root)
    assert "leaves the catalog root" in problems[f"good/{name}"]


def test_a_device_inside_the_root_is_refused_by_the_reader(tmp_path: Path) -> None:
    # The guard itself, whatever the root: a character device is never read.
    started = time.monotonic()
    with pytest.raises(RefusedFile, match="device"):
        read_bytes("/dev", "/dev/zero")
    assert time.monotonic() - started < 1


def test_an_indexignore_outside_the_root_is_not_read(tmp_path: Path) -> None:
    root = _good(tmp_path / "cat")
    outside = tmp_path / "secret"
    outside.write_text("*\n")  # would hide every file if it were used
    os.symlink(outside, root / ".indexignore")
    problems = _problems(root)
    assert "leaves the catalog root" in problems[".indexignore"]
    assert "secret" in problems[".indexignore"]


def test_an_indexignore_linked_inside_the_root_is_used(tmp_path: Path) -> None:
    root = _good(tmp_path)
    (root / "rules").mkdir()
    (root / "rules" / "ignore.txt").write_text("ignored.yaml\nignore.txt\n")
    (root / "rules" / "ignored.yaml").write_text("this: [is not a catalog\n")
    os.symlink("ignore.txt", root / "rules" / ".indexignore")
    catalog = load_directory(root, use_cache=False)
    assert [p.name for p in catalog.packages] == ["good"]


# ------------------------------------------------------------------ ignore-file limits


def _ignore_problem(root: Path, text: str | bytes) -> str:
    path = root / ".indexignore"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return _problems(root)[".indexignore"]


def test_a_huge_indexignore_is_refused_before_reading(tmp_path: Path) -> None:
    root = _good(tmp_path)
    message = _ignore_problem(root, b"# comment\n" * (MAX_IGNORE_BYTES // 5))
    assert f"{MAX_IGNORE_BYTES:,}-byte limit" in message
    assert ".indexignore" in message


def test_100k_patterns_are_refused_fast(tmp_path: Path) -> None:
    root = _good(tmp_path)
    message = _ignore_problem(root, "".join(f"{i}\n" for i in range(100_000))[:MAX_IGNORE_BYTES])
    assert f"more than {MAX_PATTERNS:,} patterns" in message


def test_a_very_long_pattern_is_refused(tmp_path: Path) -> None:
    root = _good(tmp_path)
    message = _ignore_problem(root, "ok.yaml\n" + "*a" * 10_000 + "\n")
    assert f"{MAX_PATTERN_CHARS}-character limit" in message


def test_the_patterns_of_all_ignore_files_together_are_limited(tmp_path: Path) -> None:
    root = _good(tmp_path)
    for d in range(MAX_TOTAL_PATTERNS // MAX_PATTERNS + 1):
        (root / f"d{d}").mkdir()
        (root / f"d{d}" / ".indexignore").write_text(
            "".join(f"f{i}.yaml\n" for i in range(MAX_PATTERNS))
        )
    started = time.monotonic()
    with pytest.raises(CatalogLoadError, match=f"more than {MAX_TOTAL_PATTERNS:,} patterns"):
        load_directory(root, use_cache=False)
    assert time.monotonic() - started < 10


def test_an_invalid_pattern_is_a_problem_with_its_line(tmp_path: Path) -> None:
    root = _good(tmp_path)
    (root / ".indexignore").write_text("# fine\nok.yaml\nbad\\\n")
    with pytest.raises(CatalogLoadError) as exc:
        load_directory(root, use_cache=False)
    (problem,) = exc.value.problems
    assert str(problem.origin) == ".indexignore:3"
    assert "invalid pattern" in problem.message


def test_a_backtracking_pattern_matches_in_linear_time(tmp_path: Path) -> None:
    # "*a*a*a...b" against a long name of "a"s takes exponential time with a backtracking regex.
    root = _good(tmp_path)
    (root / ".indexignore").write_text("*a" * 40 + "b\n")
    (root / ("a" * 200 + ".yaml")).write_text("schema: x.custom\nname: long\n")
    started = time.monotonic()
    catalog = load_directory(root, use_cache=False)
    assert time.monotonic() - started < 5
    assert [o.name for o in catalog.others] == ["long"]


def test_a_nested_set_pattern_raises_no_warning(tmp_path: Path) -> None:
    # Python's re warns "possible nested set" on "[[": warnings are errors in this suite.
    root = _good(tmp_path)
    (root / ".indexignore").write_text("[[]x.yaml\n")
    (root / "[x.yaml").write_text("not: [valid\n")
    assert [p.name for p in load_directory(root, use_cache=False).packages] == ["good"]


def test_a_deep_tree_is_walked_without_recursion_error(tmp_path: Path) -> None:
    root = _good(tmp_path)
    deep = root
    for _ in range(1200):  # pathlib's mkdir(parents=True) recurses: one level at a time
        deep = deep / "d"
        os.mkdir(str(deep))
    (deep / "x.yaml").write_text("schema: x.custom\nname: deep\n")
    try:
        catalog = load_directory(root, use_cache=False)
        assert [o.name for o in catalog.others] == ["deep"]
    finally:
        # shutil.rmtree (and so pytest's tmp_path clean-up) recurses: remove it bottom-up.
        (deep / "x.yaml").unlink()
        while deep != root:
            deep.rmdir()
            deep = deep.parent


def test_an_edited_indexignore_takes_effect_at_once(tmp_path: Path) -> None:
    # Compiled ignore files are remembered by (path, size, mtime, inode): an edit is a new file.
    root = _good(tmp_path)
    for name in ("a", "b"):
        (root / f"{name}.yaml").write_text(f"schema: x.custom\nname: {name}\n")
    ignore = root / ".indexignore"
    ignore.write_text("a.yaml\n")
    assert [o.name for o in load_directory(root, use_cache=False).others] == ["b"]
    ignore.write_text("bb.yaml\nb.yaml\n")
    assert [o.name for o in load_directory(root, use_cache=False).others] == ["a"]
    ignore.write_text("a.yaml\\\n")  # now invalid: reported, also when listed again
    for _ in range(2):
        with pytest.raises(CatalogLoadError, match="invalid pattern"):
            load_directory(root, use_cache=False)


def test_patterns_too_complex_for_re2_are_refused_fast(tmp_path: Path) -> None:
    root = _good(tmp_path)
    started = time.monotonic()
    message = _ignore_problem(root, "".join("*a" * 30 + "\n" for _ in range(MAX_PATTERNS)))
    assert time.monotonic() - started < 5
    assert "too complex to compile" in message


def test_a_long_symlink_chain_is_refused_without_recursion(tmp_path: Path) -> None:
    """1,500 links in a chain: the kernel gives up after 40, and so does the guard (no
    RecursionError from Python 3.11's recursive realpath)."""
    root = tmp_path / "catalog"
    root.mkdir()
    (root / "real.json").write_text('{"schema": "olm.package", "name": "p"}')
    previous = "real.json"
    for i in range(1500):
        (root / f"l{i}").symlink_to(previous)
        previous = f"l{i}"
    (root / "pkg.json").symlink_to(previous)
    files, problems = list_catalog_files(str(root))
    assert any("pkg.json" in str(p) and "loop" in str(p) for p in problems), problems
    assert [f for f in files if f.path.endswith("real.json")]
    assert guard.real_path(str(root / "l10")) == str(root / "real.json")
