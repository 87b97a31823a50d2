"""Benchmark: load + validate catalogs with pivoter and with ``opm validate``, side by side.

For each catalog directory, runs (``--runs`` times, medians reported):

* ``opm validate DIR`` (the referee; it uses every core),
* ``pivoter`` cold: a fresh process loading with the parsed cache disabled, then validating
  (files parsed on every core, :mod:`resolver.catalog.parallel`),
* ``pivoter`` cold in one process (``workers=1``): the same, parsing without worker processes,
* ``pivoter`` warm: a fresh process whose cache is already filled (the reload case),

measuring each process's wall time and peak RSS (``os.wait4`` rusage, per child), plus the
in-process time of a warm ``load_directory`` + ``validate`` (what the daemon pays on a reload).
The derived catalog is invalid as shipped (three undecodable icons; opm stops at the first), so it
is also measured "repaired" (icons dropped, in a temporary copy) to compare full loads at scale.

Usage: python bench/catalog_load.py [--runs N] [--write docs/benchmarks/catalogs.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need

ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))
# Every shared catalog directory, in name order (see ../shared/catalogs/SOURCES.md).
CATALOGS = sorted(p.name for p in SHARED.iterdir() if p.is_dir()) if SHARED.is_dir() else []

CHILD = """
import sys, time
t0 = time.perf_counter()
from resolver.catalog.load import load_directory
from resolver.catalog.validate import validate
from resolver.catalog.errors import CatalogLoadError
t1 = time.perf_counter()
try:
    workers = int(sys.argv[4]) or None
    catalog = load_directory(
        sys.argv[1], use_cache=sys.argv[2] == "1", cache_dir=sys.argv[3], workers=workers
    )
    findings = validate(catalog)
    ok = not findings
except CatalogLoadError:
    ok = False
t2 = time.perf_counter()
print(f"{t2 - t1:.4f} {int(ok)}")
"""


def run(cmd: list[str]) -> tuple[float, int, str, int]:
    """Run ``cmd``; return wall seconds, peak RSS in MiB, stdout and exit status."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss // 1024, out, proc.returncode


SPIN = "x = 0\nfor i in range(5_000_000):\n    x += i\n"


def cores_free() -> float:
    """How many cores two CPU-bound processes got just now (2.0 on an idle 2-core machine)."""
    one, _, _, _ = run([sys.executable, "-c", SPIN])
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    for proc in procs:
        proc.wait()
    return 2 * one / (time.perf_counter() - start)


def repaired_derived(tmp: Path) -> Path:
    """Copy the derived catalog, dropping the package icons whose base64 does not decode."""
    import base64
    import binascii

    dest = tmp / "community-operators-prod-derived-icons-dropped"
    shutil.copytree(SHARED / "community-operators-prod-derived", dest)
    decoder = json.JSONDecoder()
    for path in dest.glob("*/catalog.json"):
        text = path.read_text()
        objs, pos = [], 0
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos >= len(text):
                break
            obj, pos = decoder.raw_decode(text, pos)
            objs.append(obj)
        changed = False
        for obj in objs:
            icon = obj.get("icon") if obj.get("schema") == "olm.package" else None
            if icon:
                try:
                    base64.b64decode(icon.get("base64data", ""), validate=True)
                except binascii.Error:
                    del obj["icon"]
                    changed = True
        if changed:
            path.write_text("".join(json.dumps(o, indent=4) + "\n" for o in objs))
    return dest


def bench(directory: Path, runs: int, cache_dir: str) -> dict[str, object]:
    """Measure one catalog; return medians."""
    opm = str(TOOLS / "opm")
    py = [sys.executable, "-c", CHILD, str(directory)]
    rows: dict[str, list[tuple[float, int]]] = {"opm": [], "cold": [], "one": [], "warm": []}
    inproc: dict[str, list[float]] = {"cold": [], "one": [], "warm": []}
    verdicts: dict[str, bool] = {}
    subprocess.run([*py, "1", cache_dir, "0"], check=True, capture_output=True)  # fill the cache
    for _ in range(runs):
        wall, rss, _, status = run([opm, "validate", str(directory)])
        rows["opm"].append((wall, rss))
        verdicts["opm"] = status == 0
        for mode, use_cache, workers in (("cold", "0", "0"), ("one", "0", "1"), ("warm", "1", "0")):
            wall, rss, out, _ = run([*py, use_cache, cache_dir, workers])
            seconds, ok = out.split()
            rows[mode].append((wall, rss))
            inproc[mode].append(float(seconds))
            verdicts[mode] = ok == "1"
    return {
        "name": directory.name,
        "size_mb": sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 1e6,
        **{f"{k}_wall": statistics.median(w for w, _ in v) for k, v in rows.items()},
        **{f"{k}_rss": statistics.median(r for _, r in v) for k, v in rows.items()},
        **{f"{k}_inproc": statistics.median(v) for k, v in inproc.items()},
        "verdicts": verdicts,
    }


def table(results: list[dict[str, object]], runs: int) -> str:
    """Render the results as a Markdown table."""
    lines = [
        "| catalog | size | opm validate | pivoter cold (process) | pivoter cold (load+validate) "
        "| cold, 1 process (process / load+validate) "
        "| pivoter warm (process) | pivoter warm (load+validate) | peak RSS opm / cold / warm "
        "| verdict opm / pivoter | cold process / opm |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        v = r["verdicts"]
        assert isinstance(v, dict)
        lines.append(
            f"| {r['name']} | {r['size_mb']:.1f} MB | {r['opm_wall']:.2f} s "
            f"| {r['cold_wall']:.2f} s | {r['cold_inproc']:.2f} s "
            f"| {r['one_wall']:.2f} s / {r['one_inproc']:.2f} s "
            f"| {r['warm_wall']:.2f} s | {r['warm_inproc']:.3f} s "
            f"| {r['opm_rss']} / {r['cold_rss']} / {r['warm_rss']} MiB "
            f"| {'valid' if v['opm'] else 'invalid'} / {'valid' if v['cold'] else 'invalid'} "
            f"| {r['cold_wall'] / r['opm_wall']:.2f}x |"  # type: ignore[operator]
        )
    lines.append("")
    lines.append(f"Medians of {runs} runs each.")
    return "\n".join(lines)


def main() -> int:
    """Run the benchmark and print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--write", help="write the Markdown report to this file")
    parser.add_argument(
        "--catalog", action="append", help="measure only this shared catalog (repeatable)"
    )
    args = parser.parse_args()
    results = []
    load_before, free_before = os.getloadavg(), cores_free()
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = str(Path(tmp) / "cache")
        names = args.catalog or CATALOGS
        dirs = [SHARED / c for c in names]
        need(SHARED, *dirs)
        if "community-operators-prod-derived" in names:
            dirs.append(repaired_derived(Path(tmp)))
        for directory in dirs:
            results.append(bench(directory, args.runs, cache_dir))
            print(table(results[-1:], args.runs).splitlines()[-3], file=sys.stderr)
    load_after, free_after = os.getloadavg(), cores_free()
    report = table(results, args.runs)
    report += (
        f" Load average (1 min) {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end;"
        f" two CPU-bound processes got {free_before:.1f} and {free_after:.1f} cores."
    )
    print(report)
    if args.write:
        header = (
            f"Command: `python bench/catalog_load.py --runs {args.runs}`; machine: "
            f"{platform.machine()}, {os.cpu_count()} cores (shared with other work while "
            f"measuring), Python {platform.python_version()}, opm v1.73.0.\n\n"
        )
        Path(args.write).write_text(header + report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
