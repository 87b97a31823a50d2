"""What hostile catalogs cost, and what the real ones cost, under a 1 GiB address-space limit.

Issue 34 asks that every command refuse each amplification and size shape in one line, within
seconds, under a 1 GiB address-space limit, while the real catalogs of ``../shared`` still load
within it at the same peak RSS. This script measures both, for pivoter and, in the same run, for
its peer ``opm`` (``validate`` and ``render``), each command under ``prlimit --as=1GiB`` and
``/usr/bin/time``:

* **hostile shapes**, generated small on disk: one anchored 1 MiB scalar aliased 5,000 times in a
  custom-schema object; a collection alias bomb (ten levels of ten aliases); 7 million tiny JSON
  objects in one file; 40 files of them;
* **the shared catalogs**: ``catalog validate --no-cache`` on each.

For each run: exit code (or the signal), wall seconds, peak RSS (MiB) and the first line said.
``--pythonpath DIR`` runs pivoter from another tree (e.g. a ``git archive`` of an older commit)
to measure "before". Usage::

    python bench/hostile_inputs.py [--runs 3] [--pythonpath DIR] [--no-opm] [--only SHAPE,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.shared import CATALOGS as SHARED
from bench.shared import need

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache" / "pivoter" / "bin"))
LIMIT = 1 << 30
PACKAGE = '{"schema":"olm.package","name":"p","defaultChannel":"c"}\n'


def _alias_scalar(root: Path) -> None:
    """A custom-schema object (kept and rendered as it is) holding 5,000 aliases of 1 MiB."""
    aliases = ", ".join(["*big"] * 5000)
    text = f"schema: x.custom\nname: p\nbig: &big '{'x' * (1 << 20)}'\n"
    (root / "catalog.yaml").write_text(PACKAGE)
    (root / "custom.yaml").write_text(text + f"copies: [{aliases}]\n")


def _alias_collection(root: Path) -> None:
    lines = ["schema: olm.package", "name: p", "a0: &a0 ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx']"]
    for level in range(1, 11):
        lines.append(f"a{level}: &a{level} [{', '.join([f'*a{level - 1}'] * 10)}]")
    (root / "catalog.yaml").write_text("\n".join(lines) + "\n")


def _tiny_objects(root: Path) -> None:
    (root / "catalog.json").write_text(PACKAGE + '{"schema":"x"}\n' * 7_000_000)


def _tiny_objects_40_files(root: Path) -> None:
    (root / "catalog.json").write_text(PACKAGE)
    chunk = '{"schema":"x"}\n' * 175_000
    for i in range(40):
        (root / f"c{i:02}.json").write_text(chunk)


SHAPES: dict[str, Callable[[Path], None]] = {
    "alias-scalar": _alias_scalar,
    "alias-collection": _alias_collection,
    "tiny-objects": _tiny_objects,
    "tiny-objects-40-files": _tiny_objects_40_files,
}


def _measure(argv: list[str], env: dict[str, str], timeout: float) -> dict[str, object]:
    """Run ``argv`` under the address-space limit; its code, seconds, peak RSS, first line.

    It runs in the system's temporary directory: ``python -m`` puts the working directory first
    on ``sys.path``, which would hide ``--pythonpath`` behind this checkout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        command = ["/usr/bin/time", "-o", times.name, "-f", "%e %M"]
        command += ["prlimit", f"--as={LIMIT}", "--", *argv]
        try:
            done = subprocess.run(
                command,
                env=env,
                cwd=tempfile.gettempdir(),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"code": "timeout", "seconds": timeout, "rss_mib": None, "said": ""}
        fields = times.read().split()
    code: object = done.returncode
    said = next((line for line in (done.stderr + done.stdout).splitlines() if line.strip()), "")
    if "Command terminated by signal" in done.stderr:
        code = done.stderr.split("signal")[-1].split()[0]
        code = f"signal {code}"
    seconds, rss = (float(fields[-2]), int(fields[-1])) if len(fields) >= 2 else (0.0, 0)
    return {"code": code, "seconds": seconds, "rss_mib": round(rss / 1024, 1), "said": said[:160]}


def _median(runs: list[dict[str, object]]) -> dict[str, object]:
    first = dict(runs[0])
    for key in ("seconds", "rss_mib"):
        values = [r[key] for r in runs if isinstance(r[key], (int, float))]
        first[key] = round(statistics.median(values), 2) if values else None
    return first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pythonpath", default="", help="run pivoter from this tree")
    parser.add_argument("--no-opm", action="store_true")
    parser.add_argument("--only", default="", help="comma-separated shapes or catalogs")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    need(SHARED)
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    pivoter = [sys.executable, "-m", "pivoter.cli.main"]
    opm = [] if args.no_opm else [str(TOOLS / "opm")]
    only = {name for name in args.only.split(",") if name}
    results: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        targets: list[tuple[str, Path, list[str]]] = []
        for name, make in SHAPES.items():
            if only and name not in only:
                continue
            root = Path(tmp) / name
            root.mkdir()
            make(root)
            targets.append((name, root, ["validate", "render", "resolve", "test"]))
        for catalog in sorted(p for p in SHARED.iterdir() if p.is_dir()):
            if not only or catalog.name in only:
                targets.append((catalog.name, catalog, ["validate"]))
        for name, root, commands in targets:
            for command in commands:
                argv = {
                    "validate": [*pivoter, "catalog", "validate", "--no-cache", str(root)],
                    "render": [*pivoter, "catalog", "render", "--no-cache", str(root)],
                    "resolve": [*pivoter, "resolve", "--catalog", str(root), "--package", "p"],
                    "test": [*pivoter, "catalog", "test", "--no-cache", str(root)],
                }[command]
                runs = [_measure(argv, env, args.timeout) for _ in range(args.runs)]
                results.append({"target": name, "tool": "pivoter", "command": command,
                                **_median(runs)})  # fmt: skip
                print(json.dumps(results[-1]), flush=True)
                if opm and command in ("validate", "render"):
                    peer = [opm[0], command, str(root)]
                    runs = [_measure(peer, env, args.timeout) for _ in range(args.runs)]
                    results.append({"target": name, "tool": "opm", "command": command,
                                    **_median(runs)})  # fmt: skip
                    print(json.dumps(results[-1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
