"""Benchmark and survey: ``catalog test`` on the full real catalogs, and their findings.

For each catalog under ``../shared/catalogs`` (community v4.20, certified v4.20, community v4.16,
the derived catalog) loads it as ``catalog test`` does (a load failure still yields every object
that decodes), runs every check, and prints: load and test wall time, channels, entries, findings
by code and severity, the longest upgrade path, and a few findings of each code for checking by
hand. Also expands every template of ``community-operators-prod-templates`` (images resolved
through the v4.20 catalog) and counts how many expand to the channels the committed catalog has,
and times the drawing of the largest package. Findings are summarised in
``docs/catalog-testing.md``.

Usage: python bench/catalog_test.py [--examples N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.shared import CATALOGS as SHARED  # noqa: E402
from bench.shared import need  # noqa: E402
from resolver.catalog.model import Catalog  # noqa: E402
from resolver.channeltest.graph import channel_graphs  # noqa: E402
from resolver.channeltest.loading import load_for_test  # noqa: E402
from resolver.channeltest.render import to_dot  # noqa: E402
from resolver.channeltest.report import run_catalog_test  # noqa: E402
from resolver.channeltest.templates import expand_file, find_templates  # noqa: E402

CATALOGS = [
    "community-operators-prod-v4.20",
    "certified-operators-v4.20",
    "community-operators-prod-v4.16",
    "community-operators-prod-derived",
]


def survey(name: str, examples: int) -> dict[str, Any]:
    start = time.perf_counter()
    catalog, problems = load_for_test(str(SHARED / name))
    loaded = time.perf_counter()
    report = run_catalog_test(catalog, load_problems=problems)
    data = report.channels_data()
    tested = time.perf_counter()
    longest = max(
        (
            (e["length"], f"{c['package']}/{c['channel']} from {e['bundle']}")
            for c in data
            for e in c["entries"]
        ),
        default=(0, ""),
    )
    by_code: Counter[str] = Counter(f.code for f in report.findings)
    shown: dict[str, list[str]] = {}
    for f in report.findings:
        if len(shown.setdefault(f.code, [])) < examples:
            shown[f.code].append(str(f))
    return {
        "catalog": name,
        "load_s": round(loaded - start, 2),
        "test_s": round(tested - loaded, 2),
        "packages": len(catalog.packages),
        "channels": len(report.graphs),
        "entries": sum(len(g.entries) for g in report.graphs),
        "errors": len(report.errors),
        "warnings": len(report.warnings),
        "by_code": dict(sorted(by_code.items())),
        "packages_with_errors": len({f.package for f in report.errors}),
        "longest_path": longest,
        "examples": shown,
    }


def _shape(catalog: Catalog, package: str) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    return {
        c.name: sorted((e.name, e.replaces, tuple(sorted(e.skips))) for e in c.entries)
        for c in catalog.channels
        if c.package == package
    }


def templates(reference: Catalog) -> dict[str, Any]:
    root = SHARED / "community-operators-prod-templates"
    start = time.perf_counter()
    same = differ = unresolved = 0
    errors = 0
    for path in find_templates(str(root)):
        rel = str(Path(path).relative_to(root))
        for legacy in (False, True):
            expanded = expand_file(path, [reference], rel, legacy_skips=legacy)
            if legacy and not any(e.schema == "olm.semver" for e in expanded):
                break
            for e in expanded:
                unresolved += len(e.findings)
                errors += len(run_catalog_test(e.catalog, others=[reference]).errors)
                pkgs = [p.name for p in e.catalog.packages]
                if len(pkgs) != 1 or reference.package(pkgs[0]) is None:
                    continue
                if _shape(e.catalog, pkgs[0]) == _shape(reference, pkgs[0]):
                    same += 1
                else:
                    differ += 1
    return {
        "files": len(find_templates(str(root))),
        "same_channels_as_v4.20": same,
        "different": differ,
        "unresolved_images": unresolved,
        "errors": errors,
        "seconds": round(time.perf_counter() - start, 2),
    }


def draw(catalog: Catalog, package: str) -> dict[str, Any]:
    graphs = channel_graphs(catalog, package)
    start = time.perf_counter()
    text = to_dot(graphs, (catalog.package(package) or _none()).default_channel)
    built = time.perf_counter()
    dot = shutil.which("dot")
    layout = None
    if dot:
        subprocess.run([dot, "-Tsvg", "-o/dev/null"], input=text.encode(), check=True)
        layout = round(time.perf_counter() - built, 2)
    return {
        "package": package,
        "bundles": sum(len(g.entries) for g in graphs),
        "dot_text_s": round(built - start, 3),
        "graphviz_svg_s": layout,
    }


def _none() -> Any:
    raise SystemExit("package not found")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    need(*(SHARED / name for name in CATALOGS), SHARED / "community-operators-prod-templates")
    results: dict[str, Any] = {"catalogs": [survey(n, args.examples) for n in CATALOGS]}
    reference, _ = load_for_test(str(SHARED / "community-operators-prod-v4.20"))
    results["templates"] = templates(reference)
    results["drawing"] = draw(reference, "project-quay")
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
