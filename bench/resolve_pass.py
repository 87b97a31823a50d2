"""Benchmark: the resolver's share of one daemon pass, at the shapes of bench/daemon_scale.py.

A daemon pass of one Resolution resolves its one package against the Catalog it selects, with
every other input's bundle held (joint resolution: :func:`pivoter.inputs.resolve.resolve`,
exactly as :mod:`pivoter.inputs.engine` calls it). At factor F the catalog holds 100·F
packages of one bundle each (``p0000``...; the first 100 with a second version, as after one
catalog change) and 100·F - 1 bundles are held. In process, no cluster: this is the part of a
pass that grows with the number of inputs through the resolver (the catalog's index and the
held bundles); docs/benchmarks/daemon-scale.md has the whole daemon.

Each pass gets fresh ``CatalogInput`` and ``Held`` objects, as the daemon builds them per
pass, over the same loaded ``Catalog`` (the daemon's catalog cache keeps one per content).

Also timed: the scan of every other input's pivot record that each pass makes to find the
pivots in progress (:func:`pivoter.inputs.targets.pivot_targets` over 100·F cached
Resolutions, all settled: each with the status a finished pivot leaves).

Usage: python bench/resolve_pass.py [--factors 1,3,10] [--passes 50] [--rounds 5]
Prints a Markdown table: milliseconds per pass (median of the rounds' medians).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pivoter.inputs.resolve import resolve
from pivoter.inputs.targets import Ledger, pivot_targets
from pivoter.kube import Kube
from pivoter.resolvesets import RevisionStore
from resolver.catalog.load import load_objects
from resolver.catalog.model import Catalog, Origin
from resolver.rules.inputs import CatalogInput, Held, Installed, PackageRequest

CHANGED = 100
"""Packages with a second version (the first 100, as one catalog change of the daemon bench)."""


def package(i: int) -> str:
    return f"p{i:04d}"


def catalog(factor: int) -> Catalog:
    """100·F packages, one channel each, version 1.0.0 (and 1.1.0 for the first 100)."""
    objects: list[dict[str, Any]] = []
    for i in range(100 * factor):
        name = package(i)
        versions = ["1.0.0", "1.1.0"] if i < CHANGED else ["1.0.0"]
        objects.append({"schema": "olm.package", "name": name, "defaultChannel": "stable"})
        entries: list[dict[str, Any]] = []
        for n, version in enumerate(versions):
            entry: dict[str, Any] = {"name": f"{name}.v{version}"}
            if n:
                entry["replaces"] = f"{name}.v{versions[n - 1]}"
            entries.append(entry)
            objects.append(
                {
                    "schema": "olm.bundle",
                    "name": f"{name}.v{version}",
                    "package": name,
                    "image": f"registry.local/{name}:{version}",
                    "properties": [
                        {"type": "olm.package", "value": {"packageName": name, "version": version}},
                        {"type": "olm.bundle.mediatype", "value": "plain+v0"},
                    ],
                }
            )
        objects.append(
            {"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}
        )
    return load_objects(((o, Origin("catalog.json", 0)) for o in objects), name="scale")


def one_pass(loaded: Catalog, factor: int) -> float:
    """Seconds of one resolution of p0000 (installed at 1.0.0) with every other package held."""
    held = [
        Held(f"{package(i)}.v1.0.0", package(i), "1.0.0", f"Resolution r{i}")
        for i in range(1, 100 * factor)
    ]
    started = time.perf_counter()
    selection = resolve(
        [(CatalogInput("scale", loaded, priority=0), "sha256:x")],
        [PackageRequest(package(0))],
        [Installed(f"{package(0)}.v1.0.0", package(0), "1.0.0")],
        held=held,
    )
    seconds = time.perf_counter() - started
    (entry,) = selection.document.entries
    assert entry.version == "1.1.0", entry
    return seconds


def settled(i: int) -> dict[str, Any]:
    """A Resolution as the informer cache holds it after its pivot to revision 2 succeeded."""
    return {
        "metadata": {"name": f"r{i:04d}", "resourceVersion": str(1000 + i)},
        "status": {
            "activeRevision": 2,
            "lastAttemptedRevision": 2,
            "lastSuccessfulRevision": 2,
            "pivot": {
                "phase": "Succeeded",
                "revision": 2,
                "previousRevision": 1,
                "startedAt": "2026-11-27T01:00:00Z",
                "waves": [[package(i)]],
                "appliedWaves": 1,
            },
        },
    }


def scan(factor: int) -> float:
    """Seconds of one pass's look at every other input's pivot record (none in progress)."""
    inputs = [settled(i) for i in range(100 * factor)]
    started = time.perf_counter()
    found = pivot_targets(
        cast(Kube, None),
        cast(RevisionStore, None),
        "Resolution/r0000",
        inputs=lambda resource: inputs if resource.kind == "Resolution" else [],
        ledger=Ledger(),
    )
    seconds = time.perf_counter() - started
    assert found == {}, found
    return seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factors", default="1,3,10")
    parser.add_argument("--passes", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    factors = [int(f) for f in args.factors.split(",")]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    print(
        "| factor | packages | held | resolve, ms per pass | range | "
        "pivot records scanned | scan, ms per pass | range |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for factor in factors:
        loaded = catalog(factor)
        resolves, scans = [], []
        for _ in range(args.rounds):
            resolves.append(statistics.median(one_pass(loaded, factor) for _ in range(args.passes)))
            scans.append(statistics.median(scan(factor) for _ in range(args.passes)))
        print(
            f"| {factor}x | {100 * factor} | {100 * factor - 1} | {_ms(resolves)} | "
            f"{100 * factor} | {_ms(scans)} |"
        )
    return 0


def _ms(rounds: list[float]) -> str:
    """Median of the rounds' medians, and their range, in milliseconds."""
    return (
        f"{statistics.median(rounds) * 1000:.2f} | "
        f"{min(rounds) * 1000:.2f}-{max(rounds) * 1000:.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
