"""Benchmark: the steady state of pivoter with 100 Resolutions on the three real catalogs (issue 8).

A private control plane (``tests.cluster``, or the cluster of ``--kubeconfig``), one
``pivoter catalog serve`` process per real catalog in ``../shared/catalogs``
(certified-operators-v4.20, community-operators-prod-v4.20, community-operators-prod-v4.16), three
Catalogs reading them over gRPC, a real ``pivoter run`` daemon (leader election on, JSON logs at
the default level, metrics served) and ``--resolutions`` Resolutions, each requesting one real
package (round-robin over the catalogs, each Resolution selecting its catalog by label) with
``spec.paused: true``: the bundles' images are not reachable from here, so nothing installs and
what is measured is catalog polling, resolution bookkeeping, watches and leases.

Packages are chosen before anything starts: every package of a catalog is resolved alone against
that catalog in this process (the resolver the daemon uses) and only those that resolve are
requested. Once every Resolution is ``Resolved=True`` with a revision in ``status.pendingPlan``,
the script waits ``--warmup`` seconds, then samples every ``--interval`` seconds for ``--settle``
seconds the CPU time and VmRSS of each process (daemon, each catalog server, the control plane's
processes when the cluster is a private one) from ``/proc``. Reported per process: CPU % of one
core over the window and the median and peak of the per-interval figures, RSS median and peak.

``--profile OUT`` additionally runs ``py-spy record`` (``--py-spy``, a py-spy outside the repo) on
the daemon during the window and writes the collapsed stacks to OUT; py-spy's sampling costs the
daemon some CPU, so do not take the CPU figures of such a run.

Usage: python bench/steady_state.py [--resolutions 100] [--warmup 60] [--settle 120]
       [--interval 5] [--poll-interval 10m] [--kubeconfig FILE] [--profile OUT --py-spy PATH]
Prints Markdown tables for docs/benchmarks/steady-state.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402
import yaml  # noqa: E402

from bench.shared import CATALOGS as SHARED  # noqa: E402
from bench.shared import need  # noqa: E402
from pivoter.inputs.resolve import ResolveProblem, resolve  # noqa: E402
from pivoter.kube import Kube, Resource, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from resolver.catalog.load import load_directory  # noqa: E402
from resolver.rules.inputs import CatalogInput, PackageRequest  # noqa: E402
from tests.cluster import TestCluster, running_components  # noqa: E402

CATALOGS_DIRS = [
    SHARED / "certified-operators-v4.20",
    SHARED / "community-operators-prod-v4.20",
    SHARED / "community-operators-prod-v4.16",
]
CATALOGS = Resource("pivoter.io/v1alpha1", "Catalog", "catalogs", False)
RESOLUTIONS = Resource("pivoter.io/v1alpha1", "Resolution", "resolutions", False)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
SYSTEM = "pivoter-system"
CATALOG_LABEL = "bench.pivoter.io/catalog"
PACKAGE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")  # what spec.packages[].name admits


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def resolvable_packages(directory: Path) -> list[str]:
    """The packages of the catalog in ``directory`` that resolve alone against it."""
    catalog = load_directory(directory, name=directory.name, use_cache=False)
    source = CatalogInput(directory.name, catalog)
    names = sorted({b.package for b in catalog.bundles if PACKAGE_NAME.fullmatch(b.package)})
    good = []
    for name in names:
        try:
            resolve([(source, "bench")], [PackageRequest(name)], [])
        except ResolveProblem:
            continue
        good.append(name)
    return good


def choose(count: int) -> list[tuple[str, str]]:
    """``count`` (catalog, package) pairs, round-robin over the catalogs."""
    per_catalog = {d.name: resolvable_packages(d) for d in CATALOGS_DIRS}
    for name, packages in per_catalog.items():
        print(f"{name}: {len(packages)} packages resolve alone", file=sys.stderr)
    chosen: list[tuple[str, str]] = []
    for row in itertools.zip_longest(*per_catalog.values()):
        for catalog, package in zip(per_catalog, row, strict=True):
            if package is not None and len(chosen) < count:
                chosen.append((catalog, package))
    if len(chosen) < count:
        raise SystemExit(f"only {len(chosen)} packages resolve; asked for {count}")
    return chosen


@dataclass
class Process:
    """One process sampled in the window."""

    name: str
    pid: int
    cpu: list[float] = field(default_factory=list)
    """Per-interval CPU, % of one core."""
    rss: list[float] = field(default_factory=list)
    total_cpu: float = 0.0
    peak: float = 0.0


@contextlib.contextmanager
def catalog_servers(work: Path) -> Iterator[dict[str, tuple[int, subprocess.Popen[bytes]]]]:
    """One ``pivoter catalog serve`` per catalog (gRPC only), ready when yielded."""
    servers: dict[str, tuple[int, subprocess.Popen[bytes]]] = {}
    try:
        for directory in CATALOGS_DIRS:
            port = free_port()
            log = open(work / f"serve-{directory.name}.log", "wb")  # noqa: SIM115
            command = [
                sys.executable,
                "-m",
                "pivoter.cli.main",
                "catalog",
                "serve",
                str(directory),
                "--grpc-port",
                str(port),
                "--http-port",
                "-1",
            ]
            servers[directory.name] = (port, subprocess.Popen(command, stdout=log, stderr=log))
        for name, (port, process) in servers.items():
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                try:
                    grpc.channel_ready_future(channel).result(timeout=300)
                except grpc.FutureTimeoutError:
                    raise RuntimeError(
                        f"pivoter catalog serve {name} is not serving (exit {process.poll()}); "
                        f"see {work}/serve-{name}.log"
                    ) from None
        yield servers
    finally:
        for _, process in servers.values():
            process.terminate()
        for _, process in servers.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def start_daemon(kubeconfig: Path, work: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            SYSTEM,
            "--store-dir",
            str(work / "store"),
            "--leader-elect",
            "--metrics-bind-address",
            f"127.0.0.1:{free_port()}",
            "--health-probe-bind-address",
            f"127.0.0.1:{free_port()}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "daemon.log", "wb"),
    )


def resolved(kube: Kube, names: set[str]) -> tuple[int, list[str]]:
    """How many of ``names`` are Resolved=True with a revision; the first few problems."""
    done, problems = 0, []
    for item in kube.list(RESOLUTIONS)[0]:
        if item["metadata"]["name"] not in names:
            continue
        status = item.get("status") or {}
        condition = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "Resolved"), None
        )
        revision = (status.get("pendingPlan") or {}).get("revision") or status.get("activeRevision")
        if condition and condition.get("status") == "True" and revision:
            done += 1
        elif condition and condition.get("status") == "False":
            problems.append(f"{item['metadata']['name']}: {condition.get('message')}")
    return done, problems[:5]


def sample(processes: list[Process], settle: float, interval: float) -> float:
    """Sample every process for ``settle`` seconds; return the window's length."""
    last = {p.pid: cpu_seconds(p.pid) for p in processes}
    first = dict(last)
    start = previous = time.monotonic()
    while time.monotonic() - start < settle:
        time.sleep(interval)
        now = time.monotonic()
        for p in processes:
            cpu = cpu_seconds(p.pid)
            p.cpu.append(100 * (cpu - last[p.pid]) / (now - previous))
            last[p.pid] = cpu
            rss, hwm = memory_mib(p.pid)
            p.rss.append(rss)
            p.peak = hwm
        previous = now
    window = time.monotonic() - start
    for p in processes:
        p.total_cpu = 100 * (last[p.pid] - first[p.pid]) / window
    return window


def run(kubeconfig: Path, args: argparse.Namespace, work: Path, others: dict[str, int]) -> None:
    chosen = choose(args.resolutions)
    api_client = load_client(kubeconfig=str(kubeconfig))
    kube = Kube(api_client)
    crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
    Applier(KubeAPI(api_client), Owner("Bench", "crds")).apply(crds)
    with contextlib.suppress(Exception):
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}}
        )
    with catalog_servers(work) as servers:
        daemon = start_daemon(kubeconfig, work)
        try:
            for name, (port, _) in servers.items():
                kube.create(
                    CATALOGS,
                    {
                        "apiVersion": "pivoter.io/v1alpha1",
                        "kind": "Catalog",
                        "metadata": {"name": name, "labels": {CATALOG_LABEL: name}},
                        "spec": {
                            "source": {"type": "grpc", "grpc": {"address": f"127.0.0.1:{port}"}},
                            "pollInterval": args.poll_interval,
                        },
                    },
                )
            start = time.monotonic()
            names: set[str] = set()
            for i, (catalog, package) in enumerate(chosen):
                name = f"r{i:03d}-{package}"[:63].rstrip("-")
                names.add(name)
                kube.create(
                    RESOLUTIONS,
                    {
                        "apiVersion": "pivoter.io/v1alpha1",
                        "kind": "Resolution",
                        "metadata": {"name": name},
                        "spec": {
                            "packages": [{"name": package}],
                            "catalogSelector": {"matchLabels": {CATALOG_LABEL: catalog}},
                            "paused": True,
                        },
                    },
                )
            deadline = time.monotonic() + 900
            while (state := resolved(kube, names))[0] < len(names):
                if daemon.poll() is not None:
                    raise RuntimeError(
                        f"the daemon exited ({daemon.returncode}): {work}/daemon.log"
                    )
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"only {state[0]} of {len(names)} Resolutions resolved; {state[1]}"
                    )
                time.sleep(2)
            resolved_after = time.monotonic() - start
            time.sleep(args.warmup)
            processes = [Process("pivoter run (daemon)", daemon.pid)]
            processes += [
                Process(f"catalog serve {name}", process.pid)
                for name, (_, process) in servers.items()
            ]
            processes += [Process(name, pid) for name, pid in sorted(others.items())]
            profiler = None
            if args.profile:
                profiler = subprocess.Popen(
                    [
                        args.py_spy,
                        "record",
                        "--pid",
                        str(daemon.pid),
                        "--duration",
                        str(int(args.settle)),
                        "--rate",
                        "50",
                        "--format",
                        "raw",
                        "--output",
                        str(args.profile),
                    ]
                )
            window = sample(processes, args.settle, args.interval)
            if profiler is not None:
                profiler.wait(60)
        finally:
            daemon.terminate()
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
            api_client.close()  # type: ignore[no-untyped-call]
    by_catalog = {d.name: sum(1 for c, _ in chosen if c == d.name) for d in CATALOGS_DIRS}
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"{len(names)} Resolutions ({', '.join(f'{n} {c}' for c, n in by_catalog.items())}); "
        f"all Resolved {resolved_after:.1f} s after creation; warm-up {args.warmup:.0f} s; "
        f"window {window:.0f} s, sampled every {args.interval:.0f} s; "
        f"pollInterval {args.poll_interval}\n"
    )
    print(
        "| process | CPU % of a core (window) | CPU % median / peak (per interval) "
        "| RSS median MiB | RSS peak MiB |"
    )
    print("|---|---|---|---|---|")
    for p in processes:
        print(
            f"| {p.name} | {p.total_cpu:.2f} | {statistics.median(p.cpu):.2f} / "
            f"{max(p.cpu):.2f} | {statistics.median(p.rss):.0f} | {p.peak:.0f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolutions", type=int, default=100)
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds to wait first")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds sampled")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--poll-interval", default="10m", help="the Catalogs' pollInterval")
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--profile", type=Path, help="write py-spy's collapsed stacks here")
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy binary for --profile")
    args = parser.parse_args()
    need(*CATALOGS_DIRS)
    with tempfile.TemporaryDirectory(prefix="pivoter-bench-") as tmp:
        if args.kubeconfig:
            run(args.kubeconfig, args, Path(tmp), {})
            return 0
        cluster = TestCluster.start()
        try:
            assert cluster.local is not None
            others = running_components(cluster.local.root)
            run(cluster.kubeconfig, args, Path(tmp), others)
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
