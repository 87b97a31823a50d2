"""Benchmark: the daemon at 1x, 3x and 10x today's cluster (issue 18, item 4, the daemon half).

At each factor F (``--factors``, default 1,3,10), on a private control plane with a kwok node
(``tests.cluster.TestCluster.start()``), everything real:

* a distribution registry on loopback holding one plain+v0 bundle image per package and per
  standalone BundleDeployment, each a Namespace of its own and a ConfigMap in it;
* a catalog of 100·F packages (``p0000``, ...; packages are unique cluster-wide) in one file,
  served over HTTP by ``pivoter catalog serve``; a Catalog reads it (``pollInterval: 10m``);
* kube-apiserver with its watch cache, as real clusters run it (``--no-watch-cache``: the test
  suite's setting, where every label-selected LIST reads the whole collection from etcd);
* a real ``pivoter run`` (``tests.e2e.daemon.Daemon`` with ``--leader-elect``, info logs);
* 100·F Resolutions, each requesting its own package: each installs, with one child
  BundleDeployment; plus 100·F standalone BundleDeployments (``s0000``, ...) from images: 200·F
  BundleDeployments in all.

Setup is timed (cluster start, image pushes, creating the objects, until every Resolution is
Ready and every BundleDeployment Installed). Then, after ``--warmup`` seconds, an idle window of
``--idle`` seconds (nothing changes) samples the daemon's VmRSS (median, and VmHWM for the peak)
and CPU, the same for the control plane's processes and the catalog server (the peers, from the
same run), and the daemon's API requests from its own ``pivoter_kube_requests_total`` (scraped
from ``/metrics`` at both ends of the window: client-side, so the control plane's own traffic is
not in it).

Then ``--runs`` catalog changes: each is one atomic rewrite of the served catalog file that
offers a new version of the first 100 packages (images pushed before), and a change of the
Catalog's ``spec.pollInterval`` (a spec change polls at once, docs/catalogs-in-cluster.md) once
the server serves it: t0. Timed from the bench's watches: t0 → the Catalog's content digest moved
(detected), detected → first and last of the 100 Resolutions Ready on the new revision with its
child Installed at the new version; with the daemon's CPU seconds, API requests and reconciles
of that change.

``--profile DIR`` runs ``py-spy record`` (``--py-spy``) on the daemon during the idle window and
during the first change, writing collapsed stacks (``idle-<F>x.txt``, ``pivot-<F>x.txt``); take
CPU figures from a run without it.

``--wide`` adds one change offering a new version of every package (timed the same way), and
the warm-up reports the daemon's API requests per second in its busiest 60 s.
``--concurrent N`` is passed to ``pivoter run``.

Usage: python bench/daemon_scale.py [--factors 1,3,10] [--runs 3] [--warmup 330] [--idle 300]
       [--interval 5] [--setup-timeout 10800] [--seed 1] [--wide] [--concurrent N]
       [--profile DIR --py-spy PATH] [--keep-logs DIR]
Prints Markdown tables for docs/benchmarks/daemon-scale.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.daemon_scale_report import (  # noqa: E402
    ChangeResult,
    FactorResult,
    ProcessFigures,
    growth_table,
    kube_requests,
    processes_table,
    scale_table,
)
from bench.pivot import (  # noqa: E402
    BDS,
    CATALOGS,
    NAMESPACES,
    RESOLUTIONS,
    Recorder,
    child_ready,
    condition_true,
    resolution_ready,
)
from bench.steady_state import cpu_seconds, memory_mib  # noqa: E402
from pivoter.daemon.settings import DEFAULT_CONCURRENT  # noqa: E402
from pivoter.kube import Kube, KubeError, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.cluster import TestCluster, running_components  # noqa: E402
from tests.e2e.daemon import Daemon, free_port  # noqa: E402
from tests.inputs.helpers import Publisher, Version  # noqa: E402
from tests.provisioners.oci import Entry, Pusher, file  # noqa: E402
from tests.provisioners.servers import run_registry  # noqa: E402

SYSTEM = "pivoter-system"
PER_FACTOR = 100
"""Resolutions (and standalone BundleDeployments) per unit of factor."""
CHANGED = 100
"""Packages each catalog change offers a new version of."""
CATALOG = "scale"
PLAIN = "core-rukpak-io-plain"
INPUT_ANNOTATION = "pivoter.io/input"
VERSION_ANNOTATION = "pivoter.io/version"
DEADLINE = 7200
"""``progressDeadlineSeconds`` of the Resolutions: at 10x a pivot may wait long in the queue."""


def package(i: int) -> str:
    """The name of the i-th package (and of its Namespace)."""
    return f"p{i:04d}"


def standalone(i: int) -> str:
    """The name of the i-th standalone BundleDeployment (and of its Namespace)."""
    return f"s{i:04d}"


def manifests(namespace: str, version: str) -> str:
    """A bundle's objects: its own Namespace and one ConfigMap in it."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "content", "namespace": namespace},
            "data": {"version": version},
        },
    ]
    return yaml.safe_dump_all(objects)


class Daemon2(Daemon):
    """``pivoter run`` with leader election, as deploy/ runs it, and ``--concurrent``."""

    concurrent: int = DEFAULT_CONCURRENT

    def argv(self) -> list[str]:
        return [
            *super().argv(),
            *("--leader-elect", "--log-level", "info", "--concurrent", str(self.concurrent)),
        ]


@dataclass
class Catalog:
    """The bundles pushed so far and the served catalog file (one file, replaced atomically)."""

    publisher: Publisher
    served: Path

    def add(self, name: str, version: str, replaces: str = "") -> None:
        """Push the bundle image of ``name`` at ``version`` (not yet in the catalog)."""
        self.publisher.add(name, Version(version, manifests(name, version), replaces=replaces))

    def publish(self) -> None:
        """Write every package into the served directory as one file, atomically."""
        self.publisher.publish()
        parts = [p.read_text() for p in sorted(self.publisher.directory.glob("*.yaml"))]
        target = self.served / "catalog.yaml"
        tmp = self.served / ".catalog.yaml.tmp"
        tmp.write_text("---\n".join(parts))
        tmp.rename(target)


@dataclass
class Scene:
    """The running pieces of one factor."""

    factor: int
    kube: Kube
    daemon: Daemon
    catalog: Catalog
    server: subprocess.Popen[bytes]
    server_url: str
    registry_host: str
    peers: dict[str, int]
    """Control plane processes by name: their pids."""
    resolutions: Recorder
    bds: Recorder
    catalogs: Recorder
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return PER_FACTOR * self.factor


# ---------------------------------------------------------------------------- measuring


def metrics_text(daemon: Daemon) -> str:
    """The daemon's ``/metrics``."""
    url = f"http://127.0.0.1:{daemon.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def reconciles(text: str, controller: str) -> float:
    """``pivoter_reconcile_total`` of one controller, all results."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("pivoter_reconcile_total{") and f'controller="{controller}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def ready_counts(scene: Scene, revision: int) -> tuple[int, int]:
    """(Resolutions Ready on ``revision``, standalone BundleDeployments Installed)."""
    with scene.resolutions._cond:
        resolutions = sum(
            1 for o in scene.resolutions.latest.values() if resolution_ready(o, revision)
        )
    with scene.bds._cond:
        bds = sum(
            1
            for name, o in scene.bds.latest.items()
            if name.startswith("s") and condition_true(o, "Installed")
        )
    return resolutions, bds


def sample(processes: list[ProcessFigures], seconds: float, interval: float) -> float:
    """Sample CPU and RSS of ``processes`` every ``interval`` s for ``seconds``; the window."""
    last = {p.pid: cpu_seconds(p.pid) for p in processes}
    first = dict(last)
    start = previous = time.monotonic()
    while time.monotonic() - start < seconds:
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


@contextlib.contextmanager
def profiling(args: argparse.Namespace, pid: int, name: str, seconds: float) -> Iterator[None]:
    """py-spy on ``pid`` for ``seconds`` while the block runs (only with ``--profile``)."""
    if not args.profile:
        yield
        return
    args.profile.mkdir(parents=True, exist_ok=True)
    profiler = subprocess.Popen(
        [
            *(args.py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds))),
            *("--rate", "50", "--format", "raw", "--output", str(args.profile / name)),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        try:
            profiler.wait(seconds + 60)
        except subprocess.TimeoutExpired:
            profiler.terminate()


# ---------------------------------------------------------------------------- setup


def _create(kube: Kube, resource: Any, body: dict[str, Any]) -> None:
    for attempt in range(5):
        try:
            kube.create(resource, body)
            return
        except KubeError as exc:
            if exc.status == 409 or attempt == 4:
                raise
            time.sleep(1)


def create_inputs(scene: Scene) -> None:
    """The Catalog, 100·F Resolutions and 100·F standalone BundleDeployments, interleaved."""
    for i in range(scene.count):
        _create(
            scene.kube,
            RESOLUTIONS,
            {
                "apiVersion": "pivoter.io/v1alpha1",
                "kind": "Resolution",
                "metadata": {"name": package(i)},
                "spec": {
                    "packages": [{"name": package(i)}],
                    "progressDeadlineSeconds": DEADLINE,
                },
            },
        )
        name = standalone(i)
        _create(
            scene.kube,
            BDS,
            {
                "apiVersion": "core.rukpak.io/v1alpha1",
                "kind": "BundleDeployment",
                "metadata": {"name": name},
                "spec": {
                    "provisionerClassName": PLAIN,
                    "template": {
                        "spec": {
                            "provisionerClassName": PLAIN,
                            "source": {
                                "type": "image",
                                "image": {"ref": scene.catalog.publisher.image(name, "1.0.0")},
                            },
                        }
                    },
                },
            },
        )


def wait_setup(scene: Scene, timeout: float) -> None:
    """Until every Resolution is Ready on revision 1 and every standalone BundleDeployment is
    Installed; progress on stderr every 30 s. Raises with the counts reached on timeout."""
    start = time.monotonic()
    said = start
    while True:
        resolutions, bds = ready_counts(scene, 1)
        elapsed = time.monotonic() - start
        if resolutions >= scene.count and "resolutions_ready" not in scene.timings:
            scene.timings["resolutions_ready"] = elapsed
        if bds >= scene.count and "bds_installed" not in scene.timings:
            scene.timings["bds_installed"] = elapsed
        if resolutions >= scene.count and bds >= scene.count:
            return
        if scene.daemon.process is not None and scene.daemon.process.poll() is not None:
            raise RuntimeError(f"the daemon exited: {scene.daemon.tail()}")
        now = time.monotonic()
        if now - said >= 30:
            said = now
            rss, _ = memory_mib(scene.daemon.pid)
            print(
                f"  {scene.factor}x setup {elapsed:.0f}s: {resolutions}/{scene.count} "
                f"Resolutions Ready, {bds}/{scene.count} BundleDeployments Installed, daemon "
                f"{rss:.0f} MiB, CPU {cpu_seconds(scene.daemon.pid):.0f} s",
                file=sys.stderr,
            )
        if elapsed > timeout:
            raise TimeoutError(
                f"{scene.factor}x: after {elapsed:.0f} s only {resolutions}/{scene.count} "
                f"Resolutions Ready and {bds}/{scene.count} BundleDeployments Installed"
            )
        time.sleep(2)


@contextlib.contextmanager
def scene_for(factor: int, args: argparse.Namespace, work: Path) -> Iterator[Scene]:
    """Start the control plane, registry, catalog server and daemon of one factor."""
    count = PER_FACTOR * factor
    timings: dict[str, float] = {}
    with contextlib.ExitStack() as stack:
        started = time.monotonic()
        cluster = TestCluster.start(watch_cache=args.watch_cache)
        stack.callback(cluster.stop)
        timings["cluster"] = time.monotonic() - started
        assert cluster.local is not None
        peers = running_components(cluster.local.root)
        api_client = load_client(kubeconfig=str(cluster.kubeconfig))
        stack.callback(api_client.close)
        kube = Kube(api_client)
        crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
        Applier(KubeAPI(api_client), Owner("Bench", "crds")).apply(crds)
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}}
        )
        registry = stack.enter_context(run_registry(work / "registry"))
        staging, served = work / "staging", work / "served"
        staging.mkdir()
        served.mkdir()
        catalog = Catalog(
            Publisher(Pusher(f"http://{registry.host}"), registry.host, staging), served
        )
        started = time.monotonic()
        for i in range(count):
            catalog.add(package(i), "1.0.0")
            catalog.publisher.pusher.image(
                standalone(i),
                "1.0.0",
                [bundle_layer(standalone(i), "1.0.0")],
            )
        for run in range(1, args.runs + 1):
            for i in range(min(CHANGED, count)):
                catalog.publisher.pusher.image(
                    package(i), f"1.0.{run}", [bundle_layer(package(i), f"1.0.{run}")]
                )
        if args.wide:
            run = args.runs + 1
            for i in range(count):
                catalog.publisher.pusher.image(
                    package(i), f"1.0.{run}", [bundle_layer(package(i), f"1.0.{run}")]
                )
        timings["images"] = time.monotonic() - started
        catalog.publish()
        http_port = free_port()
        server_log = (work / "catalog-serve.log").open("wb")
        stack.callback(server_log.close)
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", "pivoter.cli.main", "catalog", "serve", str(served)),
                *("--name", CATALOG, "--grpc-port", "-1", "--http-port", str(http_port)),
                *("--poll-interval", "0.5"),
            ],
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(_stop, server)
        daemon = Daemon2(
            cluster.kubeconfig,
            namespace=SYSTEM,
            store_dir=work / "store",
            log=work / "daemon.log",
            webhook=False,
        )
        daemon.concurrent = args.concurrent
        stack.callback(daemon.stop)
        daemon.start()
        resolutions = Recorder(kube, RESOLUTIONS)
        stack.callback(resolutions.stop)
        bds = Recorder(kube, BDS)
        stack.callback(bds.stop)
        catalogs = Recorder(kube, CATALOGS)
        stack.callback(catalogs.stop)
        scene = Scene(
            factor,
            kube,
            daemon,
            catalog,
            server,
            f"http://127.0.0.1:{http_port}/catalogs/{CATALOG}",
            registry.host,
            peers,
            resolutions,
            bds,
            catalogs,
            timings,
        )
        wait_served(scene, f"{package(0)}.v1.0.0")
        kube.create(
            CATALOGS,
            {
                "apiVersion": "pivoter.io/v1alpha1",
                "kind": "Catalog",
                "metadata": {"name": CATALOG},
                "spec": {
                    "source": {"type": "http", "http": {"url": scene.server_url}},
                    "pollInterval": "10m",
                },
            },
        )
        catalogs.wait(lambda objs: _digest(objs.get(CATALOG)), what="the Catalog serving")
        try:
            yield scene
        finally:
            if args.keep_logs:
                target = args.keep_logs / f"{factor}x"
                target.mkdir(parents=True, exist_ok=True)
                for log in work.glob("*.log"):
                    shutil.copy(log, target / log.name)


def bundle_layer(name: str, version: str) -> list[Entry]:
    """The one layer of a plain+v0 bundle image: ``manifests/objects.yaml``."""
    return [
        Entry("manifests/", kind=tarfile.DIRTYPE),
        file("manifests/objects.yaml", manifests(name, version)),
    ]


def _digest(obj: Mapping[str, Any] | None) -> str:
    return str(((obj or {}).get("status") or {}).get("contentDigest") or "")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_served(scene: Scene, bundle: str, timeout: float = 120) -> None:
    """Until the catalog server's HTTP body names ``bundle``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{scene.server_url}/api/v1/all", timeout=10) as answer:
                if bundle.encode() in answer.read():
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"pivoter catalog serve does not serve {bundle}")
        time.sleep(0.2)


# ---------------------------------------------------------------------------- the phases


def busiest_minute(scene: Scene, seconds: float, every: float) -> float:
    """Over the next ``seconds`` (the warm-up right after setup, when the inputs settle): the
    daemon's API requests per second in its busiest 60 s (over the whole span when shorter),
    from its ``pivoter_kube_requests_total`` every ``every`` seconds."""
    points: list[tuple[float, float]] = []
    end = time.monotonic() + seconds
    while True:
        now = time.monotonic()
        points.append((now, sum(kube_requests(metrics_text(scene.daemon)).values())))
        if now >= end:
            break
        time.sleep(min(every, end - now))
    span = min(60.0, points[-1][0] - points[0][0])
    best = 0.0
    for i, (start, count) in enumerate(points):
        later = next(((t, c) for t, c in points[i + 1 :] if t - start >= span), None)
        if later is not None and later[0] > start:
            best = max(best, (later[1] - count) / (later[0] - start))
    return best


def idle(
    scene: Scene, args: argparse.Namespace
) -> tuple[list[ProcessFigures], dict[str, float], float]:
    """The idle window: per-process figures, the daemon's API requests by (verb resource), and
    the window's length."""
    processes = [ProcessFigures("pivoter run (daemon)", scene.daemon.pid)]
    processes.append(ProcessFigures("pivoter catalog serve", scene.server.pid))
    processes += [ProcessFigures(name, pid) for name, pid in sorted(scene.peers.items())]
    before = kube_requests(metrics_text(scene.daemon))
    with profiling(args, scene.daemon.pid, f"idle-{scene.factor}x.txt", args.idle):
        window = sample(processes, args.idle, args.interval)
    after = kube_requests(metrics_text(scene.daemon))
    delta = {key: after.get(key, 0.0) - before.get(key, 0.0) for key in after}
    return processes, {k: v for k, v in delta.items() if v}, window


def change(scene: Scene, run: int, args: argparse.Namespace, *, wide: bool = False) -> ChangeResult:
    """Offer 1.0.``run`` of the first 100 packages (``wide``: of every package); time until all
    of them have pivoted."""
    changed = [package(i) for i in range(scene.count if wide else min(CHANGED, scene.count))]
    version = f"1.0.{run}"
    revisions = {}
    for name in changed:
        versions = scene.catalog.publisher.packages[name]
        versions.append(Version(version, manifests(name, version), replaces=versions[-1].version))
        revisions[name] = len(versions)  # each version published is one revision
    before = _digest(scene.catalogs.latest.get(CATALOG))
    scene.catalog.publish()
    wait_served(scene, f"{changed[0]}.v{version}")
    text = metrics_text(scene.daemon)
    counted_before = kube_requests(text)
    requests_before, reconciles_before = (
        sum(counted_before.values()),
        reconciles(text, "resolutions"),
    )
    ticks = cpu_seconds(scene.daemon.pid)
    seconds = 1800.0
    with (
        profiling(args, scene.daemon.pid, f"pivot-{'wide-' if wide else ''}{scene.factor}x.txt", 60)
        if run == 1 or wide
        else contextlib.nullcontext()
    ):
        t0 = time.monotonic()
        interval = "10m" if run % 2 == 0 else "601s"
        scene.kube.merge_patch(CATALOGS, CATALOG, {"spec": {"pollInterval": interval}})
        deadline = t0 + seconds
        while True:
            done = _pivoted(scene, revisions, version)
            if done == len(changed):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{scene.factor}x change {run}: {done}/{len(changed)} pivoted")
            time.sleep(0.5)
    cpu = cpu_seconds(scene.daemon.pid) - ticks
    text = metrics_text(scene.daemon)
    counted = kube_requests(text)
    requests = sum(counted.values()) - requests_before
    by_request = {k: v - counted_before.get(k, 0.0) for k, v in counted.items()}
    passes = reconciles(text, "resolutions") - reconciles_before
    detected = next(
        (
            at
            for at, type_, obj in scene.catalogs.since(t0)
            if type_ != "DELETED" and _digest(obj) not in ("", before)
        ),
        None,
    )
    ready_times = _ready_times(scene, t0, revisions, version)
    assert detected is not None
    return ChangeResult(
        detected=detected - t0,
        first=min(ready_times) - detected,
        last=max(ready_times) - detected,
        cpu=cpu,
        requests=requests,
        reconciles=passes,
        by_request={k: v for k, v in by_request.items() if v},
    )


def _owner(obj: Mapping[str, Any]) -> str:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(INPUT_ANNOTATION, "")).partition("/")[2]


def _child_at(obj: Mapping[str, Any], revisions: Mapping[str, int], version: str) -> bool:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    owner = _owner(obj)
    return (
        owner in revisions
        and annotations.get(VERSION_ANNOTATION) == version
        and child_ready(obj, revisions[owner])
    )


def _pivoted(scene: Scene, revisions: Mapping[str, int], version: str) -> int:
    with scene.resolutions._cond:
        ready = {
            n
            for n, revision in revisions.items()
            if resolution_ready(scene.resolutions.latest.get(n) or {}, revision)
        }
    with scene.bds._cond:
        children = {
            _owner(o) for o in scene.bds.latest.values() if _child_at(o, revisions, version)
        }
    return len(ready & children)


def _ready_times(
    scene: Scene, since: float, revisions: Mapping[str, int], version: str
) -> list[float]:
    """Per Resolution of ``revisions``: when it was first Ready on its revision with its child
    Installed at ``version`` (both from the watch events)."""
    ready: dict[str, float] = {}
    for at, type_, obj in scene.resolutions.since(since):
        name = obj["metadata"]["name"]
        if name in revisions and type_ != "DELETED" and resolution_ready(obj, revisions[name]):
            ready.setdefault(name, at)
    child: dict[str, float] = {}
    for at, type_, obj in scene.bds.since(since):
        if type_ != "DELETED" and _child_at(obj, revisions, version):
            child.setdefault(_owner(obj), at)
    return [max(ready[n], child[n]) for n in revisions]


def measure(factor: int, args: argparse.Namespace) -> FactorResult:
    """Everything for one factor."""
    work = Path(tempfile.mkdtemp(prefix=f"pivoter-bench-scale-{factor}x-"))
    try:
        with scene_for(factor, args, work) as scene:
            scene.timings["base_rss"] = memory_mib(scene.daemon.pid)[0]
            started = time.monotonic()
            create_inputs(scene)
            scene.timings["create"] = time.monotonic() - started
            wait_setup(scene, args.setup_timeout)
            scene.timings["installed"] = time.monotonic() - started
            print(f"  {factor}x set up: {scene.timings}", file=sys.stderr)
            busiest = busiest_minute(scene, args.warmup, args.interval)
            print(f"  {factor}x busiest minute of the warm-up: {busiest:.1f}/s", file=sys.stderr)
            processes, requests, window = idle(scene, args)
            changes = []
            for run in range(1, args.runs + 1):
                changes.append(change(scene, run, args))
                print(f"  {factor}x change {run}: {changes[-1]}", file=sys.stderr)
            wide = change(scene, args.runs + 1, args, wide=True) if args.wide else None
            if wide is not None:
                print(f"  {factor}x change of every input: {wide}", file=sys.stderr)
            return FactorResult(
                factor=factor,
                resolutions=scene.count,
                bundle_deployments=2 * scene.count,
                timings=dict(scene.timings),
                processes=processes,
                requests=requests,
                window=window,
                changes=changes,
                busiest_minute=busiest,
                wide=wide,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--factors", default="1,3,10", help="comma-separated (default 1,3,10)")
    parser.add_argument("--runs", type=int, default=3, help="catalog changes per factor")
    parser.add_argument(
        "--warmup",
        type=float,
        default=330.0,
        help="seconds before the idle window (default 330: the inputs settle for minutes after "
        "their pivots at 3x and more)",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=300.0,
        help="seconds of the idle window (default 300: half the BundleDeployments' full-check "
        "cycle)",
    )
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--setup-timeout", type=float, default=10800.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--wide",
        action="store_true",
        help="after the --runs changes, one change offering a new version of every package",
    )
    parser.add_argument(
        "--concurrent",
        type=int,
        default=DEFAULT_CONCURRENT,
        help=f"the daemon's --concurrent (default {DEFAULT_CONCURRENT}, pivoter run's)",
    )
    parser.add_argument(
        "--no-watch-cache",
        dest="watch_cache",
        action="store_false",
        help="run kube-apiserver without its watch cache (the test suite's setting; every "
        "label-selected LIST then reads the whole collection from etcd)",
    )
    parser.add_argument("--profile", type=Path, help="write py-spy's collapsed stacks here")
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy binary for --profile")
    parser.add_argument("--keep-logs", type=Path, help="copy each factor's logs here")
    args = parser.parse_args(argv)
    args.factors = [int(f) for f in str(args.factors).split(",") if f.strip()]
    if args.runs < 1 or not args.factors or min(args.factors) < 1:
        parser.error("--runs and every factor are at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every factor and print the tables."""
    args = parse_args(argv)
    random.seed(args.seed)
    results = []
    for factor in args.factors:
        print(f"factor {factor}x", file=sys.stderr)
        try:
            results.append(measure(factor, args))
        except (TimeoutError, RuntimeError) as exc:
            print(f"{factor}x not reached: {exc}", file=sys.stderr)
            print(f"\n**{factor}x not reached**: {exc}\n")
            break
        # What is measured so far, in case a later factor does not finish.
        print("\n".join(scale_table(results)), file=sys.stderr)
        print("\n".join(processes_table(results[-1])), file=sys.stderr, flush=True)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"idle window {args.idle:g} s after {args.warmup:g} s; {args.runs} changes per factor\n"
    )
    print("\n".join(scale_table(results)) + "\n")
    print("\n".join(growth_table(results)) + "\n")
    for result in results:
        print(f"Processes at {result.factor}x (idle window):\n")
        print("\n".join(processes_table(result)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
