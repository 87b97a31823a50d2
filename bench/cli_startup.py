"""Benchmark: wall time of short ``pivoter`` command lines, start to exit.

Each command line runs ``--runs`` times as a fresh process (the console script of the active
virtualenv, as a user or a test starts it); reported: the median and the fastest run, in seconds.
``python -c pass`` is the floor (the interpreter alone, with site-packages). Every command line
runs once first, untimed, with ``PYTHONDONTWRITEBYTECODE`` unset (as for the timed runs), so that
Python's bytecode cache is written and what is measured is the start, not the compiling of a
module edited since the last run; for ``resolve`` (certified-operators-v4.20 from ``--shared``)
that run also fills the parsed-file cache, so what is measured is the command, not the first
parse. The figures in docs/benchmarks/cli.md come from it.

Usage: python bench/cli_startup.py [--runs 7] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import SHARED, need

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "cloudnative-pg"
"""A package of certified-operators-v4.20 that resolves (one bundle, no dependencies)."""


def pivoter_script() -> str:
    """The ``pivoter`` console script next to this interpreter (else the one on PATH)."""
    beside = Path(sys.executable).with_name("pivoter")
    if beside.exists():
        return str(beside)
    found = shutil.which("pivoter")
    if found is None:
        raise SystemExit("no pivoter console script: pip install -e . first")
    return found


ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
"""The environment of every run: Python may write its bytecode cache, as it does by default."""


def run(argv: list[str]) -> None:
    """Run ``argv``, which must exit 0, with its output discarded."""
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)


def timed(argv: list[str], runs: int) -> tuple[float, float]:
    """Median and fastest wall time in seconds of ``runs`` runs of ``argv``."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run(argv)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def command_lines(pivoter: str, catalog: Path) -> list[tuple[str, list[str]]]:
    """What is measured: a label and the command line."""
    resolve = [pivoter, "resolve", "--catalog", str(catalog), "--package", PACKAGE]
    return [
        ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
        ("pivoter --help", [pivoter, "--help"]),
        ("pivoter --version", [pivoter, "--version"]),
        ("pivoter version", [pivoter, "version"]),
        ("pivoter catalog validate --help", [pivoter, "catalog", "validate", "--help"]),
        ("pivoter run --help", [pivoter, "run", "--help"]),
        (f"pivoter resolve --catalog certified-operators-v4.20 --package {PACKAGE}", resolve),
    ]


def main() -> None:
    """Run the command lines and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--shared", type=Path, default=SHARED)
    args = parser.parse_args()
    catalog = args.shared / "catalogs" / "certified-operators-v4.20"
    need(catalog)
    lines = command_lines(pivoter_script(), catalog)
    for _, argv in lines:  # the bytecode cache, and resolve's parsed-file cache
        run(argv)
    load = os.getloadavg()[0]
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {load:.2f} at start; {args.runs} runs each."
    )
    print()
    print("| command | median (s) | fastest (s) |")
    print("|---|---|---|")
    for label, argv in lines:
        median, fastest = timed(argv, args.runs)
        print(f"| `{label}` | {median:.3f} | {fastest:.3f} |")


if __name__ == "__main__":
    main()
