"""Benchmark of registry+v1 conversion: time per real bundle, median of repeated runs.

For each bundle in tests/data/bundles/registry-v1 (the ten real OLM bundles of ../shared) it times
``RegistryV1.convert_bundle`` twice over: a first install (webhook certificates are issued, i.e.
two ECDSA P-256 keys per webhook-serving Deployment) and a steady-state re-conversion that reads
the existing certificate Secret back and keeps it (what a reconcile does).

Usage: python bench/registry_v1_convert.py [--runs 15]
Writes nothing; prints a Markdown table for docs/benchmarks/registry-v1.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from provisioners.formats.registry_v1 import RegistryV1

BUNDLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "bundles" / "registry-v1"


def _median_ms(runs: int, fmt: RegistryV1, root: Path) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fmt.convert_bundle(root)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _lookup(objects: list[dict[str, Any]]) -> Any:
    secrets = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objects
        if o["kind"] == "Secret"
    }
    return lambda namespace, name: secrets.get((namespace, name))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, {args.runs} runs per figure, medians.\n")
    print("| bundle | manifests | objects out | webhooks | first install ms | re-convert ms |")
    print("|---|---|---|---|---|---|")
    fmt = RegistryV1()
    for package in sorted(p for p in BUNDLES.iterdir() if p.is_dir()):
        root = next(v for v in sorted(package.iterdir()) if (v / "manifests").is_dir())
        first = fmt.convert_bundle(root)
        steady = RegistryV1(secret_lookup=_lookup(first.objects))
        first_ms = _median_ms(args.runs, fmt, root)
        steady_ms = _median_ms(args.runs, steady, root)
        files = len(list((root / "manifests").iterdir()))
        print(
            f"| {package.name} {root.name} | {files} | {len(first.objects)} | "
            f"{len(first.bundle.csv.webhooks)} | {first_ms:.1f} | {steady_ms:.1f} |"
        )


if __name__ == "__main__":
    main()
