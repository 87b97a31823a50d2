"""Benchmark of the provisioner content path: hardened unpack, tree digest and tar.gz serving.

Builds a bundle of about 100 MB (many YAML manifests plus one large incompressible file), then
measures, over repeated runs, the median time and throughput of:
- unpacking the gzip and the zstd tarball with ``provisioners.unpack.unpack_tar``;
- ``provisioners.store.tree_digest`` of the unpacked tree;
- publishing into a ``BundleStore`` (digest + rename);
- streaming it back with ``BundleStore.tar_gz``.

Usage: python bench/unpack.py [--runs 5] [--megabytes 100]
Writes nothing; prints a Markdown table for docs/benchmarks/provisioners.md.
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import platform
import shutil
import statistics
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import zstandard

from provisioners.store import BundleStore, tree_digest
from provisioners.unpack import unpack_tar

T = TypeVar("T")
MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: config-{i}
  namespace: demo
data:
  key-{i}: "value {i} {pad}"
"""


def build_tar(megabytes: int) -> tuple[bytes, int]:
    """A tar with 2000 small manifests and one large random file; returns (tar, content bytes)."""
    buffer = io.BytesIO()
    content = 0
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for i in range(2000):
            data = MANIFEST.format(i=i, pad="x" * (i % 200)).encode()
            info = tarfile.TarInfo(f"manifests/cm-{i:04d}.yaml")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
            content += len(data)
        blob = os.urandom(megabytes << 20)
        info = tarfile.TarInfo("data/blob.bin")
        info.size = len(blob)
        archive.addfile(info, io.BytesIO(blob))
        content += len(blob)
    return buffer.getvalue(), content


def median_seconds(runs: int, setup: Callable[[], T], action: Callable[[T], object]) -> float:
    """Median wall time of ``action(setup())`` over ``runs`` runs (setup not timed)."""
    times = []
    for _ in range(runs):
        state = setup()
        start = time.perf_counter()
        action(state)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--megabytes", type=int, default=100)
    args = parser.parse_args()
    raw, content = build_tar(args.megabytes)
    archives = {
        "gzip": gzip.compress(raw, compresslevel=6),
        "zstd": zstandard.ZstdCompressor(level=3).compress(raw),
    }
    work = Path(tempfile.mkdtemp(prefix="bench-unpack-"))
    rows: list[tuple[str, float, int]] = []
    try:
        counter = iter(range(10**6))

        def fresh() -> Path:
            return work / f"t{next(counter)}"

        for name, data in archives.items():

            def unpack(root: Path, data: bytes = data) -> None:
                unpack_tar(io.BytesIO(data), root)

            seconds = median_seconds(args.runs, fresh, unpack)
            rows.append(
                (f"unpack_tar ({name}, {len(data) >> 20} MiB compressed)", seconds, content)
            )
        tree = work / "reference"
        unpack_tar(io.BytesIO(archives["zstd"]), tree)
        rows.append(
            (
                "tree_digest",
                median_seconds(args.runs, lambda: tree, tree_digest),
                content,
            )
        )
        store = BundleStore(work / "store")

        def staged() -> Path:
            target = Path(tempfile.mkdtemp(dir=work / "store" / "staging")) / "tree"
            shutil.copytree(tree, target)
            store.gc(set(), grace_seconds=0)  # publish must store, not deduplicate
            return target

        rows.append(
            ("BundleStore.publish", median_seconds(args.runs, staged, store.publish), content)
        )
        key = store.publish(staged()).key

        def serve(_: object) -> None:
            for _chunk in store.tar_gz(key):
                pass

        rows.append(
            ("BundleStore.tar_gz (stream)", median_seconds(args.runs, lambda: None, serve), content)
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; runs: {args.runs}; bundle content: "
        f"{content / 1e6:.1f} MB in {2001} files"
    )
    print()
    print("| step | median s | MB/s |")
    print("|---|---|---|")
    for label, seconds, size in rows:
        print(f"| {label} | {seconds:.2f} | {size / 1e6 / seconds:.0f} |")


if __name__ == "__main__":
    main()
