"""Resolver benchmarks: ``python bench/resolve.py [--repeat N] [--shared DIR]``.

Measures, with catalogs already loaded (load time is reported separately, not counted):

1. every package of certified-operators-v4.20 resolved alone (p50/p99 over packages of the
   median of N repeats);
2. all packages of community-operators-prod-v4.20 that resolve alone, requested together (when
   they conflict, the explanation is what is measured);
3. the same on community-operators-prod-derived;
4. one unsatisfiable explanation (pg4k-pgd, which needs cert-manager);
5. a random instance shaped like OLM's solver benchmark (256 variables, P(mandatory)=0.1,
   P(dependency)=0.15 with 1-5 candidates, P(conflict)=0.05), solved with OLM's preference
   search and with pivoter's exact optimisation.

Prints a Markdown table (the figures in docs/benchmarks/resolver.md come from it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import SHARED, need
from resolver.catalog.load import load_objects
from resolver.catalog.model import Catalog, Origin
from resolver.catalog.sources import CatalogSourceError, open_source
from resolver.profiles import solve_variables
from resolver.profiles.pivoter import Pivoter
from resolver.rules.inputs import (
    CatalogInput,
    Index,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)
from resolver.sat import (
    ConflictsWith,
    Dependency,
    Engine,
    Mandatory,
    NotSatisfiable,
    Objective,
    Variable,
)
from resolver.sat.constraints import Constraint


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median wall time in ms of ``repeat`` runs, and the last result."""
    times = []
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def load_without_icons(root: Path) -> Catalog:
    """Read a directory of JSON-stream files, dropping package icons.

    The derived catalog has three package icons that are not valid base64, which the loader
    rightly refuses; icons play no part in resolution, so the benchmark leaves them out.
    """
    decoder = json.JSONDecoder()
    objects = []
    for path in sorted(root.rglob("*.json")):
        text = path.read_text()
        pos = 0
        while True:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            blob, pos = decoder.raw_decode(text, pos)
            blob.pop("icon", None)
            objects.append((blob, Origin(str(path.relative_to(root)))))
    return load_objects(objects, name=root.name)


def load(shared: Path, name: str) -> tuple[list[CatalogInput], Index, float]:
    start = time.perf_counter()
    try:
        catalog = open_source(str(shared / "catalogs" / name)).fetch()
    except CatalogSourceError:
        catalog = load_without_icons(shared / "catalogs" / name)
    sources = [CatalogInput(name, catalog)]
    index = Index(sources)
    return sources, index, (time.perf_counter() - start) * 1000


def resolve(sources: list[CatalogInput], index: Index, packages: list[str]) -> str:
    inp = ResolutionInput(sources, [PackageRequest(p) for p in packages])
    try:
        Pivoter(inp, index=index).resolve()
        return "ok"
    except Unsatisfiable:
        return "unsat"


def alone(sources: list[CatalogInput], index: Index, repeat: int) -> tuple[list[float], list[str]]:
    times, ok = [], []
    for pkg in sorted(p.name for p in sources[0].catalog.packages):
        ms, result = timed(lambda p=pkg: resolve(sources, index, [p]), repeat)
        times.append(ms)
        if result == "ok":
            ok.append(pkg)
    return times, ok


def olm_instance(seed: int = 9, n: int = 256) -> list[Variable]:
    """A random problem with the shape of OLM's ``BenchmarkSolve`` (not its exact instance)."""
    rnd = random.Random(seed)
    ids = [f"v{i}" for i in range(n)]
    variables = []
    for vid in ids:
        cs: list[Constraint] = []
        if rnd.random() < 0.1:
            cs.append(Mandatory())
        if rnd.random() < 0.15:
            cs.append(Dependency(tuple(rnd.sample(ids, rnd.randint(1, 5)))))
        if rnd.random() < 0.05:
            cs.append(ConflictsWith(rnd.choice(ids)))
        variables.append(Variable(vid, tuple(cs)))
    return variables


def olm_search(variables: list[Variable]) -> str:
    try:
        solve_variables(variables)
        return "ok"
    except NotSatisfiable:
        return "unsat"


def optimise(variables: list[Variable]) -> str:
    with Engine(variables) as engine:
        try:
            engine.check()
        except NotSatisfiable:
            return "unsat"
        fixed = engine.optimize([Objective("fewest", tuple(engine.lit(v.id) for v in variables))])
        engine.canonical_model(fixed)
        return "ok"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shared", type=Path, default=SHARED)
    args = parser.parse_args()
    need(args.shared / "catalogs")
    rows: list[tuple[str, str, str]] = []

    cert, cert_index, cert_load = load(args.shared, "certified-operators-v4.20")
    times, _ = alone(cert, cert_index, args.repeat)
    rows.append(
        (
            f"certified-operators-v4.20: each of {len(times)} packages alone",
            f"p50 {percentile(times, 50):.1f} ms, p99 {percentile(times, 99):.1f} ms, "
            f"max {max(times):.1f} ms",
            "p50 < 5 ms, p99 < 50 ms",
        )
    )
    for name in ("community-operators-prod-v4.20", "community-operators-prod-derived"):
        sources, index, load_ms = load(args.shared, name)
        a_times, ok = alone(sources, index, 1)
        ms, outcome = timed(lambda s=sources, i=index, o=ok: resolve(s, i, o), args.repeat)
        rows.append(
            (
                f"{name}: {len(ok)} packages that resolve alone, together ({outcome})",
                f"{ms:.0f} ms (alone: p50 {percentile(a_times, 50):.1f} ms, "
                f"p99 {percentile(a_times, 99):.1f} ms; catalog load {load_ms:.0f} ms)",
                "< 1 s",
            )
        )
    ms, outcome = timed(lambda: resolve(cert, cert_index, ["pg4k-pgd"]), args.repeat)
    rows.append(
        ("unsatisfiable explanation: pg4k-pgd (certified)", f"{ms:.1f} ms ({outcome})", "< 200 ms")
    )
    instance = olm_instance()
    ms, outcome = timed(lambda: olm_search(instance), args.repeat)
    rows.append(
        (
            "OLM-shaped random instance, 256 vars, OLM preference search",
            f"{ms:.1f} ms ({outcome})",
            "-",
        )
    )
    ms, outcome = timed(lambda: optimise(instance), args.repeat)
    rows.append(
        (
            "OLM-shaped random instance, 256 vars, exact fewest-variables",
            f"{ms:.1f} ms ({outcome})",
            "-",
        )
    )
    sat_instances = [olm_instance(seed) for seed in range(20)]
    sat_times = [timed(lambda v=v: olm_search(v), args.repeat)[0] for v in sat_instances]
    outcomes = [olm_search(v) for v in sat_instances]
    rows.append(
        (
            "OLM-shaped random instances, seeds 0-19, preference search",
            f"p50 {percentile(sat_times, 50):.1f} ms, max {max(sat_times):.1f} ms "
            f"({outcomes.count('ok')} sat, {outcomes.count('unsat')} unsat)",
            "-",
        )
    )

    print(f"command: python bench/resolve.py --repeat {args.repeat}")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}; catalog load not counted (certified: {cert_load:.0f} ms)"
    )
    print()
    print("| measurement | result (median of repeats) | goal |")
    print("|---|---|---|")
    for what, result, goal in rows:
        print(f"| {what} | {result} | {goal} |")


if __name__ == "__main__":
    main()
