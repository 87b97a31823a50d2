"""Loading on every core gives exactly what loading in one process gives.

Each catalog is loaded twice, ``workers=1`` (one process) and ``workers=2`` with
``parallel_min_bytes=0`` (worker processes, whatever the size), and the catalogs, or the
problems' text and order, must be the same. :func:`resolver.catalog.parallel.load_files` is also
driven directly, with loaders that record which process ran them, die, or raise.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from resolver.catalog import cache as parsed_cache
from resolver.catalog.errors import CatalogLoadError, Problem
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog, Meta, Origin
from resolver.catalog.parallel import PARALLEL_MIN_BYTES, load_files
from resolver.catalog.walk import CatalogFile, list_catalog_files
from tests.catalog.helpers import CATALOGS, DATA
from tests.tools import SHARED, requires_shared

PARALLEL = {"workers": 2, "parallel_min_bytes": 0}


def _outcome(root: Path, **options: object) -> Catalog | list[str]:
    """The catalog loaded from ``root``, or the text of every problem, in order."""
    try:
        return load_directory(root, use_cache=False, **options)  # type: ignore[arg-type]
    except CatalogLoadError as err:
        return [f"{p} io={p.io}" for p in err.problems]


@pytest.mark.parametrize("name", CATALOGS)
def test_small_catalog_copies_load_the_same_on_every_core(name: str) -> None:
    one = _outcome(DATA / name, workers=1)
    assert _outcome(DATA / name, **PARALLEL) == one


def _bundle(package: str, version: str, padding: str) -> dict[str, object]:
    return {
        "schema": "olm.bundle",
        "package": package,
        "name": f"{package}.v{version}",
        "image": f"quay.io/example/{package}:v{version}",
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            {"type": "olm.csv.metadata", "value": {"description": padding}},
        ],
    }


def _write_package(root: Path, index: int, *, as_json: bool, padding: str) -> None:
    package = f"pkg-{index:03d}"
    versions = [f"1.{minor}.0" for minor in range(8)]
    blobs: list[dict[str, object]] = [
        {"schema": "olm.package", "name": package, "defaultChannel": "stable"},
        {
            "schema": "olm.channel",
            "package": package,
            "name": "stable",
            "entries": [
                {"name": f"{package}.v{v}", **({"replaces": f"{package}.v{p}"} if p else {})}
                for p, v in zip([None, *versions], versions, strict=False)
            ],
        },
        *(_bundle(package, v, padding) for v in versions),
    ]
    directory = root / package
    directory.mkdir()
    if as_json:
        text = "".join(json.dumps(b, indent=4) + "\n" for b in blobs)
        (directory / "catalog.json").write_text(text)
    else:
        text = "".join("---\n" + json.dumps(b, indent=2) + "\n" for b in blobs)
        (directory / "catalog.yaml").write_text(text)


def _generated(root: Path, *, broken: bool) -> Path:
    """A catalog over :data:`PARALLEL_MIN_BYTES` (YAML and JSON files), with defects if asked."""
    root.mkdir()
    padding = "x" * (PARALLEL_MIN_BYTES // 300)  # 320 bundles: over the threshold
    for index in range(40):
        _write_package(root, index, as_json=index % 2 == 0, padding=padding)
    if broken:
        (root / "pkg-003" / "catalog.yaml").write_text("schema: olm.package\nname: [unclosed\n")
        (root / "pkg-010" / "catalog.json").write_bytes(
            b'{"schema": "olm.package", "name": "\xff"}'
        )
        (root / "pkg-017" / "catalog.yaml").write_text(
            "schema: olm.package\nname: a\n---\nname: no-schema\n---\nschema: x\nname: [1\n"
        )
        (root / "pkg-021" / "more.yaml").write_text(
            "schema: olm.bundle\nname: 7\n---\nschema: olm.channel\nentries: 3\n"
        )
        (root / "outside").symlink_to("/etc/hostname")
    return root


def test_generated_catalog_takes_the_parallel_path_and_loads_the_same(tmp_path: Path) -> None:
    root = _generated(tmp_path / "big", broken=False)
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) > PARALLEL_MIN_BYTES
    one = _outcome(root, workers=1)
    assert isinstance(one, Catalog)
    assert len(one.bundles) == 40 * 8
    assert _outcome(root, workers=2) == one  # the default threshold: parallel
    assert _outcome(root) == one  # the machine's cores


def test_every_problem_is_reported_in_file_order_by_the_workers(tmp_path: Path) -> None:
    root = _generated(tmp_path / "broken", broken=True)
    one = _outcome(root, workers=1)
    assert isinstance(one, list)
    assert len(one) >= 6
    assert one[0].startswith("outside: symbolic link leaves the catalog root")
    assert _outcome(root, **PARALLEL) == one
    assert _outcome(root, workers=3, parallel_min_bytes=0) == one


def test_the_cache_written_from_the_workers_serves_a_warm_load(tmp_path: Path) -> None:
    root = _generated(tmp_path / "big", broken=False)
    cache = tmp_path / "cache"
    cold = load_directory(root, cache_dir=str(cache), **PARALLEL)  # type: ignore[arg-type]
    (cache_file,) = cache.iterdir()
    assert cache_file.read_bytes().startswith(parsed_cache._MAGIC)
    files = parsed_cache.read(str(cache), str(root)).files
    assert len(files) == 40
    assert all(isinstance(blob, bytes) for _, blob in files.values())
    warm = load_directory(root, cache_dir=str(cache), workers=1)
    assert warm == cold == load_directory(root, use_cache=False, workers=1)
    # One file changed: only it is parsed again; the others' bytes are written back unchanged.
    changed = root / "pkg-005" / "catalog.yaml"
    changed.write_text(changed.read_text().replace('"defaultChannel": "stable"', '"x": 1'))
    again = load_directory(root, cache_dir=str(cache), **PARALLEL)  # type: ignore[arg-type]
    rewritten = parsed_cache.read(str(cache), str(root)).files
    assert {k: v for k, v in rewritten.items() if k != "pkg-005/catalog.yaml"} == {
        k: v for k, v in files.items() if k != "pkg-005/catalog.yaml"
    }
    assert again == load_directory(root, use_cache=False, workers=1)


def _refs(root: Path) -> list[CatalogFile]:
    files, problems = list_catalog_files(str(root))
    assert not problems
    return files


def _pid_loader(
    root: str, ref: CatalogFile, max_file_bytes: int
) -> tuple[list[Meta], list[Problem], None]:
    """Loads nothing from the file: says which process handled it."""
    return [Meta("x.pid", "", str(os.getpid()), {}, Origin(ref.relpath))], [], None


def test_workers_and_this_process_share_the_files(tmp_path: Path) -> None:
    root = _generated(tmp_path / "big", broken=False)
    refs = _refs(root)
    loaded = load_files(
        str(root), refs, _pid_loader, max_file_bytes=1 << 30, keep_blobs=True, workers=2
    )
    assert [f.objects[0].origin for f in loaded] == [Origin(r.relpath) for r in refs]  # file order
    pids = {f.objects[0].name for f in loaded}  # type: ignore[union-attr]
    assert str(os.getpid()) in pids
    assert len(pids) == 2
    for f in loaded:  # what a worker loaded comes encoded (as the cache keeps it)
        here = f.objects[0].name == str(os.getpid())  # type: ignore[union-attr]
        assert f.blob == (None if here else parsed_cache.pack_entry(f.objects, f.lines))


PARENT = os.getpid()


def _dying_loader(
    root: str, ref: CatalogFile, max_file_bytes: int
) -> tuple[list[Meta], list[Problem], None]:
    """Kills the worker process that is handed the largest file; loads it in the parent."""
    if os.getpid() != PARENT and ref.relpath.startswith("pkg-000/"):
        os._exit(9)
    return _pid_loader(root, ref, max_file_bytes)


def test_a_worker_that_dies_costs_only_time(tmp_path: Path) -> None:
    root = _generated(tmp_path / "big", broken=False)
    (root / "pkg-000" / "catalog.json").write_text(
        (root / "pkg-000" / "catalog.json").read_text() * 3
    )
    refs = _refs(root)
    loaded = load_files(
        str(root), refs, _dying_loader, max_file_bytes=1 << 30, keep_blobs=False, workers=2
    )
    assert [f.objects[0].origin for f in loaded] == [Origin(r.relpath) for r in refs]
    assert loaded[0].objects[0].name == str(PARENT)  # type: ignore[union-attr]


class Boom(RuntimeError):
    pass


def _raising_loader(
    root: str, ref: CatalogFile, max_file_bytes: int
) -> tuple[list[Meta], list[Problem], None]:
    """Fails on pkg-001 (made the largest file, so first handed to a worker), wherever it runs."""
    if ref.relpath.startswith("pkg-001/"):
        raise Boom(f"bug while loading {ref.relpath}")
    return _pid_loader(root, ref, max_file_bytes)


def test_an_exception_in_a_worker_is_raised_here_as_without_workers(tmp_path: Path) -> None:
    root = _generated(tmp_path / "big", broken=False)
    big = root / "pkg-001" / "catalog.yaml"
    big.write_text(big.read_text() * 3)
    refs = _refs(root)
    with pytest.raises(Boom, match=r"pkg-001/catalog\.yaml"):
        load_files(
            str(root), refs, _raising_loader, max_file_bytes=1 << 30, keep_blobs=False, workers=2
        )


@pytest.mark.slow
@requires_shared  # every full catalog; the small copies are tested above
def test_shared_catalogs_load_the_same_on_every_core(tmp_path: Path) -> None:
    directories = sorted(p for p in (SHARED / "catalogs").iterdir() if p.is_dir())
    assert len(directories) >= 7
    for directory in directories:
        one = _outcome(directory, workers=1)
        assert _outcome(directory, **PARALLEL) == one, directory.name
    copy = tmp_path / "copy"
    shutil.copytree(SHARED / "catalogs" / "certified-operators-v4.20", copy)
    cache = tmp_path / "cache"
    cold = load_directory(copy, cache_dir=str(cache))
    assert load_directory(copy, cache_dir=str(cache), workers=1) == cold
