"""Benchmark: what a catalog change costs the daemon before any input is queued.

On a content change the Resolution controllers compare the two contents package by package
(:func:`resolver.catalog.diff.diff`) and queue only the inputs whose last resolution read what
changed (:mod:`pivoter.inputs.relevance`). This times that comparison on the shared real
catalogs that are valid: the same content loaded twice (no change: every package compared
whole) and with one bundle added to one package, as a catalog update does. Two separate loads,
so no object is shared between the two contents, as between two polls.

Usage: python bench/catalog_diff.py [--runs 5] [CATALOG_DIR ...]
Prints a Markdown table: milliseconds per comparison (median of the runs) and what differed.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need
from resolver.catalog.diff import diff
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog, ChannelEntry

DEFAULT = [
    SHARED / "community-operators-prod-v4.20",
    SHARED / "certified-operators-v4.20",
    SHARED / "community-operators-prod-v4.16",
]


def _with_one_more(catalog: Catalog) -> Catalog:
    """``catalog`` with a new head bundle in the first channel of its first package."""
    channel = catalog.channels[0]
    head = channel.entries[-1] if channel.entries else None
    template = next(b for b in catalog.bundles if b.package == channel.package)
    new = replace(template, name=f"{template.name}-bench-next", image=template.image + "-next")
    entries = (*channel.entries, ChannelEntry(new.name, replaces=head.name if head else ""))
    channels = [replace(channel, entries=entries), *catalog.channels[1:]]
    return Catalog(catalog.name, list(catalog.packages), channels, [*catalog.bundles, new])


def _time(before: Catalog, after: Catalog, runs: int) -> tuple[float, int]:
    times = []
    changed = 0
    for _ in range(runs):
        # A fresh index each time: the daemon diffs a content it just loaded.
        a = Catalog(
            before.name, before.packages, before.channels, before.bundles, before.deprecations
        )
        b = Catalog(after.name, after.packages, after.channels, after.bundles, after.deprecations)
        began = time.perf_counter()
        result = diff(a, b)
        times.append(time.perf_counter() - began)
        changed = len(result.packages)
    return statistics.median(times) * 1000, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("catalogs", nargs="*", type=Path, default=DEFAULT)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    need(*args.catalogs)
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}\n")
    print(
        "| catalog | packages | bundles | no change, ms | one bundle added, ms | packages changed |"
    )
    print("|---|---|---|---|---|---|")
    for path in args.catalogs:
        one = load_directory(path, use_cache=False)
        two = load_directory(path, use_cache=False)
        same, _ = _time(one, two, args.runs)
        added, changed = _time(one, _with_one_more(two), args.runs)
        print(
            f"| {path.name} | {len(one.packages)} | {len(one.bundles)} | {same:.0f} | "
            f"{added:.0f} | {changed} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
