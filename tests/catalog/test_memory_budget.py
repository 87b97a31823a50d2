"""Memory bounded by what came in (issue 34): catalogs that become gigabytes through aliases, or
that hold millions of tiny objects, are refused by every command in one line, within seconds,
under a 1 GiB address-space limit; the real catalogs still load under it.

The guards: :mod:`resolver.safedata` (what one text may become, aliases expanded) and the memory
budget of each catalog file and the ceiling of the whole catalog (:mod:`resolver.catalog.load`).
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pivoter.cli.exitcodes import ExitCode
from resolver import safedata
from resolver.catalog import load as load_module
from resolver.catalog import parallel
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import (
    EARLY_REFUSAL,
    MEMORY_PER_BYTE,
    CatalogTooLarge,
    load_directory,
    load_file_objects,
    load_objects,
    load_served,
)
from resolver.catalog.model import Origin
from resolver.catalog.parse import ParsedFile, parse_text
from resolver.catalog.walk import CatalogFile, list_catalog_files
from tests.clirun import pivoter
from tests.tools import SHARED, requires_shared

GiB = 1 << 30

BASE = """schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v1.0.0
---
schema: olm.bundle
package: foo
name: foo.v1.0.0
image: quay.io/foo/foo:v1.0.0
properties:
- type: olm.package
  value: {packageName: foo, version: 1.0.0}
"""

BIG = "a" * (256 << 10)
"""Aliased 5,000 times: 1.3 GB written out, from files of about 300 KB."""
N = 5000
ALIASES = "[" + ", ".join(["*b"] * N) + "]"
MANIFEST = '{"kind": "A", "x": "' + "a" * (192 << 10) + '"}'
"""An ``olm.bundle.object`` manifest of 192 KiB (256 KiB of base64): decoded 5,000 times."""


def _bundle(name: str, properties: str, extra: str = "") -> str:
    return (
        f"schema: olm.bundle\npackage: foo\nname: {name}\nimage: quay.io/foo/foo:{name}\n"
        f"{extra}properties:\n- type: olm.package\n  value: {{packageName: foo, version: 0.0.1}}\n"
        + properties
    )


def _object_data(manifest: str) -> str:
    return base64.b64encode(manifest.encode()).decode()


# file -> text: each amplifies through aliases in another place or form.
AMPLIFIERS: dict[str, str] = {
    "custom-schema.yaml": f"schema: x.custom\nname: d\nbig: &b {BIG}\nl: {ALIASES}\n",
    "bundle-property.yaml": _bundle(
        "p.v1", "- {type: x.prop, value: *b}\n" * N, extra=f"big: &b {BIG}\n"
    ),
    "bundle-object.yaml": _bundle(
        "o.v1",
        "- {type: olm.bundle.object, value: {data: *b}}\n" * N,
        extra=f"big: &b {_object_data(MANIFEST)}\n",
    ),
    "package-description.yaml": (
        f"schema: olm.package\nname: bar\nbig: &b {BIG}\ndescription: *b\nproperties:\n"
        + "- {type: x.p, value: *b}\n" * N
    ),
    "deprecation.yaml": (
        f"schema: olm.deprecations\npackage: foo\nbig: &b {BIG}\nentries:\n"
        + "- {reference: {schema: olm.package}, message: *b}\n" * N
    ),
    "collection.yaml": f"schema: x.custom\nname: d\nbig: &b [{BIG}]\nl: {ALIASES}\n",
    "merge.yaml": f"schema: x.custom\nname: d\nbig: &b {{k: {BIG}}}\nl: ["
    + ", ".join(["{<<: *b}"] * N)
    + "]\n",
    "key.yaml": f"schema: x.custom\nname: d\nbig: &b {BIG}\nl: ["
    + ", ".join(["{*b : 1}"] * N)
    + "]\n",
    "documents.yaml": "".join(
        f"---\nschema: x.custom\nname: d{i}\nbig: &b {'a' * (16 << 10)}\nl: ["
        + ", ".join(["*b"] * 1500)
        + "]\n"
        for i in range(16)
    ),
    "object-yaml.yaml": _bundle(
        "y.v1",
        (
            "- type: olm.bundle.object\n  value: {data: "
            + _object_data(
                f"kind: A\nbig: &b {'a' * (64 << 10)}\nl: [" + ", ".join(["*b"] * 400) + "]\n"
            )
            + "}\n"
        )
        * 3,
    ),
}


def _run(*args: str, cache: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = pivoter(*args, env={**os.environ, "PIVOTER_CACHE": str(cache)}, address_space=GiB)
    return result, time.monotonic() - started


def _assert_refused(result: subprocess.CompletedProcess[str], seconds: float) -> None:
    assert result.returncode >= 0, f"killed by signal {-result.returncode}"
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "MemoryError" not in result.stdout + result.stderr
    assert result.returncode == ExitCode.INVALID, (result.stdout[-800:], result.stderr[-800:])
    assert seconds < 15, seconds


def test_alias_amplification_is_refused_by_every_command_in_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "cat"
    directory.mkdir()
    (directory / "catalog.yaml").write_text(BASE)
    for name, text in AMPLIFIERS.items():
        (directory / name).write_text(text)
    assert sum(f.stat().st_size for f in directory.iterdir()) < 4 << 20  # small on disk
    cache = tmp_path / "cache"
    validate, seconds = _run("catalog", "validate", "--no-cache", str(directory), cache=cache)
    _assert_refused(validate, seconds)
    reasons = {}
    for name in AMPLIFIERS:
        (finding,) = [line for line in validate.stdout.splitlines() if line.startswith(name)]
        assert "alias bomb" in finding, finding
        reasons[name] = finding.split(": error: ", 1)[1].removesuffix(" [load]")
    for args in (
        ("catalog", "render", "--no-cache", str(directory)),
        ("resolve", "--catalog", str(directory), "--package", "foo"),
        ("catalog", "test", str(directory)),
    ):
        result, seconds = _run(*args, cache=cache)
        _assert_refused(result, seconds)
        for name, reason in reasons.items():
            assert reason in result.stdout + result.stderr, (args, name)


@pytest.mark.parametrize("name", ["custom-schema.yaml", "package-description.yaml"])
def test_a_catalog_that_is_only_an_amplifier_is_refused_with_its_reason(
    tmp_path: Path, name: str
) -> None:
    """Nothing loads at all: catalog test names the refusal (it said "neither a file-based
    catalog nor catalog templates", exit 1), with exit 3 as validate."""
    directory = tmp_path / "cat"
    directory.mkdir()
    (directory / name).write_text(AMPLIFIERS[name])
    for args in (("catalog", "test", str(directory)), ("catalog", "validate", str(directory))):
        result, seconds = _run(*args, cache=tmp_path / "cache")
        _assert_refused(result, seconds)
        assert "alias bomb" in result.stdout + result.stderr, args
        assert "neither" not in result.stderr


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"c.json": '{"schema":"x"}\n' * 300_000}, "too many small objects"),
        ({"c.json": '{"schema":"x"}' * 300_000}, "too many small objects"),
        ({"c.yaml": "---\nschema: x\n" * 300_000}, "too many small objects"),
        ({f"c{i:02}.json": '{"schema":"x"}\n' * 8000 for i in range(40)}, "too many small"),
    ],
    ids=["json-lines", "json-compact", "yaml-documents", "40-files"],
)
def test_many_small_objects_are_refused_at_once(
    tmp_path: Path, files: dict[str, str], words: str
) -> None:
    directory = tmp_path / "cat"
    directory.mkdir()
    (directory / "catalog.yaml").write_text(BASE)
    for name, text in files.items():
        (directory / name).write_text(text)
    cache = tmp_path / "cache"
    for args in (
        ("catalog", "validate", "--no-cache", str(directory)),
        ("catalog", "render", "--no-cache", str(directory)),
        ("resolve", "--catalog", str(directory), "--package", "foo"),
    ):
        result, seconds = _run(*args, cache=cache)
        _assert_refused(result, seconds)
        assert seconds < 5, (args, seconds)
        output = result.stdout + result.stderr
        assert output.count(words) == len(files), output[-1000:]


def test_a_catalog_over_the_ceiling_is_refused_before_any_parse(tmp_path: Path) -> None:
    """40 files of tiny objects (the issue's report: 7 million of them took two minutes and 4 GB
    to fail), here 36 MB of them estimated at 1.6 times the ceiling: refused as a whole, in the
    time it takes to read them, with one line rather than one per file."""
    directory = tmp_path / "cat"
    directory.mkdir()
    (directory / "catalog.yaml").write_text(BASE)
    chunk = '{"schema":"x"}\n' * 60_000
    for i in range(40):
        (directory / f"c{i:02}.json").write_text(chunk)
    cache = tmp_path / "cache"
    result, seconds = _run("catalog", "validate", "--no-cache", str(directory), cache=cache)
    _assert_refused(result, seconds)
    assert seconds < 5, seconds
    assert "more than its ceiling of 512.0 MiB: refusing it" in result.stdout
    assert len(result.stdout.splitlines()) == 2  # the refusal and the summary
    # catalog test does not fall back to loading the files one by one (each within its budget)
    result, seconds = _run("catalog", "test", str(directory), cache=cache)
    assert result.returncode != ExitCode.OK, result.stdout[-1000:]
    assert "Traceback" not in result.stderr
    assert seconds < 5, seconds
    assert "more than its ceiling of 512.0 MiB" in result.stdout + result.stderr


@pytest.mark.slow
@requires_shared  # the densest and the largest real catalogs, whole
@pytest.mark.parametrize(
    ("name", "code"),
    [("certified-operators-v4.20", ExitCode.OK), ("community-operators-prod-derived", 3)],
)
def test_the_real_catalogs_still_load_under_one_gib(tmp_path: Path, name: str, code: int) -> None:
    """The densest real catalog file (10.8 times its size, estimated) and the largest catalog
    (24 MB of JSON; its three findings are icons that are not base64, as in opm)."""
    result, _ = _run(
        "catalog", "validate", "--no-cache", str(SHARED / "catalogs" / name), cache=tmp_path
    )
    assert result.returncode == code, result.stdout[-1000:] + result.stderr[-1000:]
    assert "memory" not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


# -- the library: budgets, ceiling, order of refusals ---------------------------------------------


def _catalog(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    (root / "catalog.yaml").write_text(BASE)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _spy_on_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the loader parses from now on (this process only: load with ``workers=1``)."""
    parsed: list[str] = []

    def spy(text: str) -> ParsedFile:
        parsed.append(text)
        return parse_text(text)

    monkeypatch.setattr(load_module, "parse_text", spy)
    return parsed


def _problems(root: Path, **options: Any) -> list[str]:
    with pytest.raises(CatalogLoadError) as caught:
        load_directory(root, use_cache=False, **options)
    return [str(p) for p in caught.value.problems]


def test_the_ceiling_is_checked_before_parsing_and_decides_as_a_cold_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = "---\nschema: x.custom\nname: " + "n" * 50 + "\n"  # 7 times its size
    files = {f"c{i}.yaml": document * 2000 for i in range(6)}
    root = _catalog(tmp_path / "cat", files)
    total = sum(safedata.text_cost(p.read_bytes()) for p in root.iterdir())
    # Fits: loads, each file within its share of the ceiling (cold, then warm from the cache).
    cache = str(tmp_path / "cache")
    for _ in range(2):
        catalog = load_directory(root, cache_dir=cache, max_memory=total + 1000)
        assert len(catalog.others) == 12_000
    # One byte less than the estimate: refused before any file is parsed, cold or warm.
    parsed = _spy_on_parses(monkeypatch)
    for use_cache in (False, True):
        with pytest.raises(CatalogTooLarge) as caught:
            load_directory(root, cache_dir=cache, use_cache=use_cache, max_memory=total - 1)
        (problem,) = caught.value.problems
        assert "more than its ceiling" in str(problem)
    assert parsed == []


def test_a_file_of_many_small_objects_is_refused_before_its_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _spy_on_parses(monkeypatch)
    root = _catalog(tmp_path / "cat", {"tiny.json": '{"schema":"x"}\n' * 20_000})
    (problem,) = _problems(root, workers=1)
    assert problem.startswith("tiny.json: parsed, its objects would take about")
    assert "times its size (too many small objects)" in problem
    assert f"({MEMORY_PER_BYTE} times its size on disk plus 16 KiB)" in problem
    assert len(parsed) == 1  # catalog.yaml only


def test_one_dense_document_is_parsed_first_so_a_better_reason_wins(tmp_path: Path) -> None:
    deep = "schema: x.custom\nname: d\nd: " + "{a: " * 50_000  # nested past 200 levels
    dense = "schema: x.custom\nname: d\nd: [" + ",".join(["{}"] * 50_000) + "]\n"
    root = _catalog(tmp_path / "cat", {"deep.yaml": deep, "dense.yaml": dense})
    assert safedata.text_cost(dense) < EARLY_REFUSAL
    deep_problem, dense_problem = _problems(root, workers=1)
    assert "nested deeper than 200 levels" in deep_problem
    assert "too many small objects" in dense_problem


def test_budgets_are_the_same_with_workers(tmp_path: Path) -> None:
    files = {**AMPLIFIERS, "tiny.json": '{"schema":"x"}\n' * 20_000}
    root = _catalog(tmp_path / "cat", files)
    alone = _problems(root, workers=1)
    assert len(alone) == len(files)
    assert _problems(root, workers=2, parallel_min_bytes=0) == alone
    with pytest.raises(CatalogLoadError) as caught:
        load_served(root, use_cache=False, workers=2, parallel_min_bytes=0)
    assert [str(p) for p in caught.value.problems] == alone


def test_a_spent_budget_is_one_problem_per_file(tmp_path: Path) -> None:
    root = _catalog(tmp_path / "cat", {"documents.yaml": AMPLIFIERS["documents.yaml"]})
    (problem,) = _problems(root, workers=1)
    assert problem.startswith("documents.yaml:")
    assert "memory budget" in problem


def test_catalog_test_reads_files_with_the_same_budget() -> None:
    objects, problems = load_file_objects(AMPLIFIERS["key.yaml"], "key.yaml")
    assert objects == []
    assert [p.message.split(",")[0] for p in problems] == [
        "YAML aliases expand the data (refusing a possible alias bomb)"
    ]
    objects, problems = load_file_objects('{"schema":"x"}\n' * 20_000, "tiny.json")
    assert objects == []
    (problem,) = problems
    assert "too many small objects" in problem.message


def test_objects_from_the_wire_are_decoded_within_a_budget() -> None:
    manifest = f"kind: A\nbig: &b {'a' * (64 << 10)}\nl: [" + ", ".join(["*b"] * 400) + "]\n"
    bundle = {
        "schema": "olm.bundle",
        "package": "foo",
        "name": "foo.v1",
        "properties": [
            {"type": "olm.package", "value": {"packageName": "foo", "version": "1.0.0"}},
            *[{"type": "olm.bundle.object", "value": {"data": _object_data(manifest)}}] * 3,
        ],
    }
    assert load_objects([(bundle, Origin("line 1"))]).bundles  # 26 MB each: per-text limits
    budget = load_module.file_budget(1 << 20)
    with pytest.raises(CatalogLoadError) as caught:
        load_objects([(bundle, Origin("line 1"))], budget=budget)
    (problem,) = caught.value.problems
    assert "alias bomb" in str(problem)
    assert "\n" not in str(problem)


def _receive(budget: safedata.MemoryBudget, piece: str, count: int) -> tuple[int, str]:
    """Charge ``count`` pieces: how many were taken before the budget refused one, and why."""
    for taken in range(count):
        try:
            load_module.charge_received(budget, piece)
        except safedata.BudgetExceeded as err:
            return taken, str(err)
    return count, ""


def test_a_catalog_received_piece_by_piece_has_the_same_budget() -> None:
    """What catalogd's JSON lines and gRPC messages would use (resolver.catalog.sources)."""
    bundle = '{"schema":"olm.bundle","package":"foo","name":"foo.v1","image":"quay.io/foo/foo:v1"}'
    budget = load_module.received_budget()
    assert _receive(budget, bundle, 100_000) == (100_000, "")  # 6 times their size
    assert budget.limit <= load_module.MEMORY_CEILING
    # Tiny objects (24 times their size) are refused within the first few kilobytes.
    taken, why = _receive(load_module.received_budget(), '{"schema":"x"}', 1_000_000)
    assert taken < 200
    assert why.startswith("what arrived would take about")
    assert "memory budget of a received catalog (16 times what arrived plus 16 KiB" in why


def test_a_directory_of_too_many_entries_is_refused_while_it_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cat"
    (root / "sub").mkdir(parents=True)
    for i in range(30):
        (root / f"f{i}.yaml").write_text("schema: x.custom\n")
        (root / "sub" / f"g{i}.yaml").write_text("schema: x.custom\n")
    files, problems = list_catalog_files(str(root), max_entries=50)
    assert files == []
    assert [p.message for p in problems] == [
        "the catalog directory holds more than 50 files and directories (ignored ones "
        "included); refusing it"
    ]
    assert len(list_catalog_files(str(root), max_entries=61)[0]) == 60

    def few(root: str, **options: Any) -> tuple[list[CatalogFile], list[Any]]:
        return list_catalog_files(root, **options, max_entries=50)

    monkeypatch.setattr(load_module, "list_catalog_files", few)
    with pytest.raises(CatalogTooLarge):
        load_directory(root, use_cache=False)


def test_long_key_lists_in_messages_are_cut() -> None:
    blob = {f"key{i:06}": 1 for i in range(100_000)}
    with pytest.raises(CatalogLoadError) as caught:
        load_objects([(blob, Origin("x"))])
    (problem,) = caught.value.problems
    assert str(problem).endswith("key000009, and 99,990 more)")
    folded = {f"K{i}": 1 for i in range(50)} | {f"k{i}": 1 for i in range(50)}
    with pytest.raises(CatalogLoadError) as caught:
        load_objects([({"schema": "x", **folded}, Origin("x"))])
    assert str(caught.value).endswith("; and 40 more")


class _Connection:
    """A result pipe whose first send fails for lack of memory."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        if message[1] == b"huge":
            raise MemoryError
        self.sent.append(message)


def test_a_worker_that_cannot_pickle_a_result_hands_the_file_back() -> None:
    import queue

    outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    messages: list[Any] = [(0, b"huge", []), (1, b"small", []), None]
    for message in messages:
        outbox.put(message)
    connection = _Connection()
    parallel._send_all(outbox, connection)  # type: ignore[arg-type]
    assert connection.sent == [(0, None, []), (1, b"small", [])]


def _never(root: str, ref: CatalogFile, max_file_bytes: int) -> Any:
    raise AssertionError("no file is handed to this worker")


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_worker_whose_parent_dies_exits() -> None:
    """A parent killed for want of memory (or by a timeout) used to leave its workers waiting
    for a task forever, each holding what it had parsed: each held its own task pipe's write end
    (copied by fork). Here the parent is a forked process that ends without stopping its worker."""
    import multiprocessing

    read, write = os.pipe()
    parent = os.fork()
    if parent == 0:  # pragma: no cover - the doomed parent
        try:
            os.close(read)
            context = multiprocessing.get_context("fork")
            worker = parallel._Worker.start(context, "/", [], _never, 1)
            os.write(write, str(worker.process.pid).encode())
        finally:
            os._exit(0)
    os.close(write)
    pid = int(os.read(read, 64))
    os.close(read)
    os.waitpid(parent, 0)
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert not _running(pid), "the orphaned worker is still waiting for a task"
    finally:
        if _running(pid):
            os.kill(pid, 9)
