"""Benchmark: how fast a real ``pivoter run`` daemon notices a catalog change, per source kind,
and how long a grouped pivot of 10 plain bundles takes from that moment.

Everything runs for real: a private control plane with a simulated (kwok) node
(``tests.cluster.TestCluster.start()``, or the cluster of ``--kubeconfig``), a distribution
registry on loopback for the bundle images and the catalog image, ``pivoter catalog serve`` as a
subprocess, and ``pivoter run`` as a subprocess (``tests.e2e.daemon.Daemon``). The bench only
writes catalog content and watches the API server; every time is the bench's monotonic clock
when a watch event arrived (Catalogs, Resolutions, child BundleDeployments, ResolveSet
ConfigMaps), so sub-second steps are resolved even though status timestamps have one-second
resolution.

1. **Detection, per source kind** (``grpc`` and ``http`` from ``pivoter catalog serve``, a catalog
   ``image`` in the registry, ``configMaps``): a Catalog polled every ``--poll-interval`` seconds
   and a Resolution of one package (selecting only that Catalog). Each run waits a random part
   of the interval, publishes a new version of the package, and takes t0 when the source offers
   it (the server answers with it over HTTP, the image push or the ConfigMap write returned).
   *Detection* is the first Catalog event whose ``status.contentDigest`` moved; then the
   ResolveSet revision's ConfigMap, the pivot's start, and ``Ready`` on the new revision.
2. **The 10-bundle group pivot**: one Resolution requesting 10 packages (one ResolveSet, one
   grouped pivot of 10 child BundleDeployments), each bundle one ConfigMap or one Deployment on
   the kwok node (``--workload``), from a Catalog over HTTP polled every second. Each run
   publishes a new version of all 10 and splits the time from detection: revision written,
   pivot started (``Preparing``), bundles prepared (``Applying``), applied (``Waiting``),
   every child Installed and Healthy (from the BundleDeployments), the pivot noticing it
   (``Pruning``), ``Succeeded``, ``Ready``.

Usage: python bench/pivot.py [--runs 5] [--poll-interval 5] [--kinds grpc,http,image,configMaps]
       [--workload both|configmap|deployment] [--skip-detection] [--skip-pivot] [--seed 1]
       [--keep-logs DIR] [--kubeconfig FILE]
Prints Markdown tables (medians, min and max over the runs) for docs/benchmarks/pivot.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pivoter.kube import Gone, Kube, KubeError, NotFound, Resource, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.cluster import TestCluster  # noqa: E402
from tests.e2e.daemon import Daemon  # noqa: E402
from tests.inputs.helpers import Publisher, Version  # noqa: E402
from tests.provisioners.oci import (  # noqa: E402
    LAYER_GZIP,
    OCI_CONFIG,
    OCI_MANIFEST,
    Pusher,
    compress,
    file,
    tar_bytes,
)
from tests.provisioners.servers import run_registry  # noqa: E402

T = TypeVar("T")
Object = dict[str, Any]

CATALOGS = Resource("pivoter.io/v1alpha1", "Catalog", "catalogs", False)
RESOLUTIONS = Resource("pivoter.io/v1alpha1", "Resolution", "resolutions", False)
BDS = Resource("core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", False)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", namespaced=True)

SYSTEM = "pivoter-system"
APPS = "bench-apps"
KINDS = ("grpc", "http", "image", "configMaps")
WORKLOADS = ("configmap", "deployment")
GROUP_SIZE = 10
FLOOR_SHARDS = 8
KUBECTL = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache/pivoter/bin")) / "kubectl"
CONFIGS_LABEL = "operators.operatorframework.io.index.configs.v1"
KIND_LABEL = "bench.pivoter.io/kind"
INPUT_NAME_LABEL = "pivoter.io/input-name"
REVISION_LABEL = "pivoter.io/revision"
REVISION_ANNOTATION = "pivoter.io/revision"
INPUT_ANNOTATION = "pivoter.io/input"
WAIT = 180.0
"""Longest wait for any one step (a stuck step fails the bench with the state it saw)."""

MARKS = (
    ("detected", "catalog change detected (Catalog `status.contentDigest` moved)"),
    ("revision", "ResolveSet revision written"),
    ("started", "pivot started (`Preparing`)"),
    ("prepared", "bundles unpacked, ordered and dry-run (`Applying`)"),
    ("applied", "children applied (`Waiting`)"),
    ("first_child", "first child Installed and Healthy"),
    ("workloads", "every Deployment rolled out (the bundles' own readiness)"),
    ("children", "every child Installed and Healthy (BundleDeployments)"),
    ("installed", "pivot saw it (`Pruning`)"),
    ("succeeded", "`Succeeded`"),
    ("ready", "Resolution `Ready` on the new revision"),
)
"""The steps of one change, in order; all but ``detected`` are measured from detection
(``workloads`` only when the bundles install Deployments)."""

EXTRA_ROWS = (
    ("rollout", "longest single Deployment rollout (its spec changed → rolled out)"),
    ("overhead", "detected → `Ready` minus that rollout: pivoter's own share"),
    (
        "floor",
        "the floor: the same objects by 8 parallel `kubectl apply --server-side`, until ready",
    ),
)
"""Rows of the pivot table that are durations of their own, not steps from detection."""

PHASE_MARKS = {
    "started": ("Preparing", "Applying", "Waiting", "Pruning", "Succeeded"),
    "prepared": ("Applying", "Waiting", "Pruning", "Succeeded"),
    "applied": ("Waiting", "Pruning", "Succeeded"),
    "installed": ("Pruning", "Succeeded"),
    "succeeded": ("Succeeded",),
}
"""Which ``status.pivot.phase`` values mean a step was reached (a later phase implies it)."""


# ---------------------------------------------------------------------------- pure helpers


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="changes per measurement (default 5)")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=5.0,
        help="spec.pollInterval of the detection Catalogs, in seconds (default 5)",
    )
    parser.add_argument(
        "--pivot-poll-interval",
        type=float,
        default=1.0,
        help="spec.pollInterval of the group pivot's Catalog (HTTP), in seconds (default 1)",
    )
    parser.add_argument(
        "--kinds",
        type=_kinds,
        default=KINDS,
        help=f"source kinds to time detection for, comma-separated (default {','.join(KINDS)})",
    )
    parser.add_argument(
        "--workload",
        choices=(*WORKLOADS, "both"),
        default="both",
        help="what each of the 10 bundles installs (default both, one after the other)",
    )
    parser.add_argument("--skip-detection", action="store_true", help="only the group pivot")
    parser.add_argument("--skip-pivot", action="store_true", help="only detection")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random waits")
    parser.add_argument(
        "--keep-logs", type=Path, help="copy the daemon's and the catalog server's logs here"
    )
    parser.add_argument("--kubeconfig", type=Path, help="use this cluster (needs a kwok node)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if args.poll_interval < 1 or args.pivot_poll_interval < 1:
        parser.error("poll intervals are at least 1 s (the Catalog controller's minimum)")
    return args


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"{text!r}: choose from {', '.join(KINDS)}")
    return kinds


def duration(seconds: float) -> str:
    """``seconds`` as a Go duration for ``spec.pollInterval`` (``5s``, ``1.5s``, ``500ms``)."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    return f"{seconds:g}s"


def spread(samples: Iterable[float]) -> tuple[float, float, float]:
    """Median, min and max of ``samples``."""
    values = sorted(samples)
    if not values:
        raise ValueError("no samples")
    return statistics.median(values), values[0], values[-1]


def cell(samples: Iterable[float]) -> str:
    """``median (min-max)`` in seconds, for a table."""
    median, low, high = spread(samples)
    return f"{median:.2f} ({low:.2f}-{high:.2f})"


def condition_true(obj: Mapping[str, Any], type_: str) -> bool:
    """Whether ``obj`` has condition ``type_`` True, computed for its current generation."""
    generation = (obj.get("metadata") or {}).get("generation")
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            observed = c.get("observedGeneration")
            return c.get("status") == "True" and (observed is None or observed == generation)
    return False


def pivot_phase(obj: Mapping[str, Any], revision: int) -> str:
    """``status.pivot.phase`` of a Resolution when its pivot targets ``revision``, else ''."""
    pivot = (obj.get("status") or {}).get("pivot") or {}
    return str(pivot.get("phase") or "") if pivot.get("revision") == revision else ""


def resolution_ready(obj: Mapping[str, Any], revision: int) -> bool:
    """Whether a Resolution is Ready with ``revision`` active."""
    status = obj.get("status") or {}
    return status.get("activeRevision") == revision and condition_true(obj, "Ready")


def child_ready(bd: Mapping[str, Any], revision: int) -> bool:
    """Whether a child BundleDeployment is on ``revision`` and Installed and Healthy for its
    current generation."""
    annotations = (bd.get("metadata") or {}).get("annotations") or {}
    return (
        annotations.get(REVISION_ANNOTATION) == str(revision)
        and condition_true(bd, "Installed")
        and condition_true(bd, "Healthy")
    )


Event = tuple[float, str, Object]
"""(monotonic time it arrived, watch event type, object)."""


def first(events: Iterable[Event], since: float, check: Callable[[Object], bool]) -> float | None:
    """The time of the first event at or after ``since`` whose object passes ``check``."""
    for at, type_, obj in events:
        if at >= since and type_ != "DELETED" and check(obj):
            return at
    return None


def all_children_ready(
    events: Iterable[Event], since: float, input_ref: str, revision: int, count: int
) -> float | None:
    """When ``count`` children of ``input_ref`` (``Resolution/NAME``) were first all ready on
    ``revision`` at once, replaying BundleDeployment events (None: never)."""
    state: dict[str, Object] = {}
    for at, type_, obj in events:
        metadata = obj.get("metadata") or {}
        if (metadata.get("annotations") or {}).get(INPUT_ANNOTATION) != input_ref:
            continue
        if type_ == "DELETED":
            state.pop(str(metadata.get("name")), None)
        else:
            state[str(metadata.get("name"))] = obj
        if at < since:
            continue
        ready = [bd for bd in state.values() if child_ready(bd, revision)]
        if len(ready) >= count:
            return at
    return None


def first_child_ready(
    events: Iterable[Event], since: float, input_ref: str, revision: int
) -> float | None:
    """When the first child of ``input_ref`` was ready on ``revision``."""
    return first(
        events,
        since,
        lambda bd: (
            ((bd.get("metadata") or {}).get("annotations") or {}).get(INPUT_ANNOTATION) == input_ref
            and child_ready(bd, revision)
        ),
    )


def deployment_version(deployment: Mapping[str, Any]) -> str:
    """The ``VERSION`` a bench Deployment's pod template carries ('' if none)."""
    template = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for container in template.get("containers") or []:
        for env in container.get("env") or []:
            if env.get("name") == "VERSION":
                return str(env.get("value") or "")
    return ""


def rolled_out(deployment: Mapping[str, Any], version: str) -> bool:
    """Whether a Deployment runs ``version`` only, every replica updated and available."""
    metadata, status = deployment.get("metadata") or {}, deployment.get("status") or {}
    wanted = int((deployment.get("spec") or {}).get("replicas", 1))
    return (
        deployment_version(deployment) == version
        and status.get("observedGeneration") == metadata.get("generation")
        and int(status.get("updatedReplicas") or 0) == wanted
        and int(status.get("availableReplicas") or 0) == wanted
        and int(status.get("replicas") or 0) == wanted
    )


def rollouts(
    events: Iterable[Event], names: Iterable[str], version: str
) -> tuple[float | None, float | None]:
    """When every Deployment of ``names`` had rolled out ``version``, and the longest single
    rollout (its spec changed to ``version`` -> rolled out); (None, None) if one never did."""
    wanted = set(names)
    changed: dict[str, float] = {}
    done: dict[str, float] = {}
    for at, type_, obj in events:
        name = str((obj.get("metadata") or {}).get("name"))
        if name not in wanted or type_ == "DELETED":
            continue
        if deployment_version(obj) == version:
            changed.setdefault(name, at)
            if rolled_out(obj, version):
                done.setdefault(name, at)
    if set(done) != wanted:
        return None, None
    return max(done.values()), max(done[n] - changed[n] for n in wanted)


def pivot_marks(
    *,
    detected: float,
    resolutions: Iterable[Event],
    config_maps: Iterable[Event],
    children: Iterable[Event],
    name: str,
    revision: int,
    count: int,
    deployments: Iterable[Event] = (),
    workloads: Iterable[str] = (),
    version: str = "",
) -> dict[str, float | None]:
    """Seconds from ``detected`` to each step of :data:`MARKS` (None where not seen), and
    ``rollout``: the longest single Deployment rollout of ``workloads`` (None without)."""
    resolution_events = [e for e in resolutions if e[2]["metadata"]["name"] == name]
    times: dict[str, float | None] = {
        "revision": first(
            config_maps,
            0.0,
            lambda cm: (
                (cm["metadata"].get("labels") or {}).get(INPUT_NAME_LABEL) == name
                and (cm["metadata"].get("labels") or {}).get(REVISION_LABEL) == str(revision)
            ),
        ),
        "children": all_children_ready(children, 0.0, f"Resolution/{name}", revision, count),
        "first_child": first_child_ready(children, 0.0, f"Resolution/{name}", revision),
        "ready": first(resolution_events, 0.0, lambda o: resolution_ready(o, revision)),
    }
    for mark, phases in PHASE_MARKS.items():

        def reached(obj: Object, phases: tuple[str, ...] = phases) -> bool:
            return pivot_phase(obj, revision) in phases

        times[mark] = first(resolution_events, 0.0, reached)
    names = list(workloads)
    times["workloads"], rollout = rollouts(deployments, names, version) if names else (None, None)
    marks = {
        mark: (None if (at := times[mark]) is None else at - detected)
        for mark, _ in MARKS
        if mark != "detected"
    }
    ready = marks["ready"]
    overhead = None if ready is None else ready - (rollout or 0.0)
    return {**marks, "rollout": rollout, "overhead": overhead}


def detection_table(
    interval: float, rows: Mapping[str, list[dict[str, float | None]]]
) -> list[str]:
    """Markdown lines: detection latency per source kind and the steps after it."""
    lines = [
        "| source | poll interval s | t0 → detected s | ÷ interval | detected → revision s "
        "| detected → pivot started s | detected → Ready s |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, runs in rows.items():
        detected = _present(runs, "detected")
        median = spread(detected)[0]
        lines.append(
            f"| {kind} | {interval:g} | {cell(detected)} | {median / interval:.2f} | "
            f"{_cell_of(runs, 'revision')} | {_cell_of(runs, 'started')} | "
            f"{_cell_of(runs, 'ready')} |"
        )
    return lines


def pivot_table(columns: Mapping[str, list[dict[str, float | None]]]) -> list[str]:
    """Markdown lines: one row per step of :data:`MARKS`, one column per workload."""
    names = list(columns)
    lines = [
        "| step | " + " | ".join(f"{n}: s, median (min-max)" for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for mark, text in MARKS:
        prefix = "t0 → " if mark == "detected" else "detected → "
        cells = [_cell_of(columns[n], mark) if _seen(columns[n], mark) else "n/a" for n in names]
        lines.append(f"| {prefix}{text} | " + " | ".join(cells) + " |")
    for mark, text in EXTRA_ROWS:
        cells = [_cell_of(columns[n], mark) if _seen(columns[n], mark) else "n/a" for n in names]
        lines.append(f"| {text} | " + " | ".join(cells) + " |")
    return lines


def _seen(runs: list[dict[str, float | None]], mark: str) -> bool:
    return mark not in ("workloads", "rollout") or bool(_present(runs, mark))


def _present(runs: list[dict[str, float | None]], mark: str) -> list[float]:
    return [float(v) for run in runs if (v := run.get(mark)) is not None]


def _cell_of(runs: list[dict[str, float | None]], mark: str) -> str:
    values = _present(runs, mark)
    missing = len(runs) - len(values)
    if not values:
        return "not seen"
    return cell(values) + (f" ({missing} not seen)" if missing else "")


# ---------------------------------------------------------------------------- watches


class Recorder:
    """Watches one resource in a thread and keeps every event with the time it arrived."""

    def __init__(
        self, kube: Kube, resource: Resource, namespace: str | None = None, selector: str = ""
    ) -> None:
        self.kube, self.resource, self.namespace, self.selector = (
            kube,
            resource,
            namespace,
            selector,
        )
        self.events: list[Event] = []
        self.latest: dict[str, Object] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._synced = False
        self._stream: Any = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{resource}", daemon=True)
        self._thread.start()
        self.wait(lambda _: self._synced, timeout=30, what=f"the first list of {resource}")

    def _run(self) -> None:
        while not self._stopped:
            try:
                items, version = self.kube.list(
                    self.resource, self.namespace, label_selector=self.selector
                )
                now = time.monotonic()
                with self._cond:
                    for item in items:
                        self._record(now, "LISTED", item)
                    self._synced = True
                    self._cond.notify_all()
                while not self._stopped:
                    self._stream = self.kube.watch(
                        self.resource,
                        self.namespace,
                        resource_version=version,
                        timeout_seconds=240,
                        label_selector=self.selector,
                    )
                    for type_, obj in self._stream:
                        version = str(obj["metadata"].get("resourceVersion") or version)
                        if type_ == "BOOKMARK":
                            continue
                        with self._cond:
                            self._record(time.monotonic(), type_, obj)
                            self._cond.notify_all()
            except Gone:
                continue  # list again
            except KubeError:
                if not self._stopped:
                    time.sleep(0.5)

    def _record(self, at: float, type_: str, obj: Object) -> None:
        self.events.append((at, type_, obj))
        name = str(obj["metadata"]["name"])
        if type_ == "DELETED":
            self.latest.pop(name, None)
        else:
            self.latest[name] = obj

    def wait(
        self, check: Callable[[dict[str, Object]], T], *, timeout: float = WAIT, what: str
    ) -> T:
        """Block until ``check(latest objects by name)`` is truthy; return it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (result := check(self.latest)):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
                self._cond.wait(min(left, 1.0))
            return result

    def since(self, start: float) -> list[Event]:
        """A copy of the events that arrived at or after ``start``."""
        with self._cond:
            return [e for e in self.events if e[0] >= start]

    def snapshot(self) -> list[Event]:
        """A copy of every event so far."""
        with self._cond:
            return list(self.events)

    def stop(self) -> None:
        """End the watch."""
        self._stopped = True
        stream = self._stream
        if stream is not None:
            stream.close()


# ---------------------------------------------------------------------------- the setup


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _manifest(workload: str, package: str, version: str) -> str:
    """One bundle's objects: a ConfigMap, or a Deployment (on the kwok node) of one replica."""
    if workload == "configmap":
        body: Object = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": package, "namespace": APPS},
            "data": {"version": version},
        }
    else:
        labels = {"app": package}
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": package, "namespace": APPS},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "registry.invalid/app:1",
                                "env": [{"name": "VERSION", "value": version}],
                            }
                        ]
                    },
                },
            },
        }
    return yaml.safe_dump(body)


@dataclass
class Bench:
    """The running pieces and what every measurement shares."""

    kube: Kube
    work: Path
    kubeconfig: Path
    registry_host: str
    daemon: Daemon
    server_url: str
    server_address: str
    rng: random.Random
    publishers: dict[str, Publisher] = field(default_factory=dict)
    catalogs: Recorder | None = None
    resolutions: Recorder | None = None
    children: Recorder | None = None
    revisions: Recorder | None = None
    deployments: Recorder | None = None

    def publisher(self, key: str) -> Publisher:
        """The publisher of one catalog: ``served`` is the directory ``pivoter catalog serve``
        serves; the others are rendered into an image or a ConfigMap."""
        if key not in self.publishers:
            directory = self.work / "served" if key == "served" else self.work / f"fbc-{key}"
            directory.mkdir(parents=True, exist_ok=True)
            pusher = Pusher(f"http://{self.registry_host}", None, None, None)
            self.publishers[key] = Publisher(pusher, self.registry_host, directory)
        return self.publishers[key]

    # -- catalog content -----------------------------------------------------------------------

    def offer(self, kind: str, packages: Mapping[str, str], workload: str) -> float:
        """Publish ``version`` of each package (package -> version) through the source ``kind``;
        return the monotonic time the source offers it."""
        key = "served" if kind in ("grpc", "http") else kind
        publisher = self.publisher(key)
        for package, version in packages.items():
            known = publisher.packages.get(package) or []
            previous = known[-1].version if known else ""
            publisher.add(
                package, Version(version, _manifest(workload, package, version), previous)
            )
        publisher.publish()
        if key == "served":
            wanted = [f'"{p}.v{v}"' for p, v in packages.items()]
            deadline = time.monotonic() + 30
            while True:
                body = self._served_body()
                if all(w in body for w in wanted):
                    return time.monotonic()
                if time.monotonic() > deadline:
                    raise TimeoutError("pivoter catalog serve did not serve the new versions")
                time.sleep(0.02)
        files = {p.name: p.read_text() for p in sorted(publisher.directory.glob("*.yaml"))}
        if kind == "image":
            self._push_catalog_image(files)
        else:
            catalog_map: Object = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "bench-catalog"},
                "data": files,
            }
            try:
                self.kube.replace(CONFIG_MAPS, catalog_map, SYSTEM)
            except NotFound:
                self.kube.create(CONFIG_MAPS, catalog_map, SYSTEM)
        return time.monotonic()

    def _served_body(self) -> str:
        try:
            with urllib.request.urlopen(f"{self.server_url}/api/v1/all", timeout=5) as answer:
                return str(answer.read().decode())
        except (urllib.error.URLError, OSError):
            return ""

    def _push_catalog_image(self, files: Mapping[str, str]) -> None:
        pusher = Pusher(f"http://{self.registry_host}", None, None, None)
        entries = [file(f"configs/{name}", text) for name, text in files.items()]
        layer = compress(tar_bytes(entries), LAYER_GZIP)
        config = json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": {"Labels": {CONFIGS_LABEL: "/configs"}},
                "rootfs": {"type": "layers", "diff_ids": []},
            }
        ).encode()
        repo = "catalogs/bench"
        manifest = {
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": OCI_CONFIG,
                "digest": pusher.blob(repo, config),
                "size": len(config),
            },
            "layers": [
                {"mediaType": LAYER_GZIP, "digest": pusher.blob(repo, layer), "size": len(layer)}
            ],
        }
        pusher.manifest(repo, "latest", json.dumps(manifest).encode(), OCI_MANIFEST)

    # -- objects -------------------------------------------------------------------------------

    def catalog(self, name: str, kind: str, interval: float) -> None:
        """A Catalog reading ``kind``, polled every ``interval`` seconds."""
        sources: dict[str, Object] = {
            "grpc": {"type": "grpc", "grpc": {"address": self.server_address}},
            "http": {"type": "http", "http": {"url": self.server_url}},
            "image": {"type": "image", "image": {"ref": f"{self.registry_host}/catalogs/bench"}},
            "configMaps": {"type": "configMaps", "configMaps": [{"name": "bench-catalog"}]},
        }
        body = {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Catalog",
            "metadata": {"name": name, "labels": {KIND_LABEL: name}},
            "spec": {"source": sources[kind], "pollInterval": duration(interval)},
        }
        self.kube.create(CATALOGS, body)

    def resolution(self, name: str, catalog: str, packages: Iterable[str]) -> None:
        """A Resolution of ``packages`` from the Catalog ``catalog`` only."""
        body = {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": {"name": name},
            "spec": {
                "packages": [{"name": p} for p in packages],
                "catalogSelector": {"matchLabels": {KIND_LABEL: catalog}},
                "progressDeadlineSeconds": int(WAIT),
            },
        }
        self.kube.create(RESOLUTIONS, body)

    def remove(self, resolution: str, catalog: str) -> None:
        """Delete the Resolution (its children go with it) and then its Catalog."""
        assert self.resolutions is not None
        with contextlib.suppress(NotFound):
            self.kube.delete(RESOLUTIONS, resolution)
        self.resolutions.wait(lambda objs: resolution not in objs, what=f"{resolution} deleted")
        with contextlib.suppress(NotFound):
            self.kube.delete(CATALOGS, catalog)

    def wait_ready(self, name: str, revision: int) -> None:
        """Until the Resolution is Ready on ``revision``."""
        assert self.resolutions is not None
        self.resolutions.wait(
            lambda objs: name in objs and resolution_ready(objs[name], revision),
            what=f"Resolution {name} Ready on revision {revision}",
        )

    def digest(self, catalog: str) -> str:
        """The Catalog's ``status.contentDigest`` as last seen."""
        assert self.catalogs is not None
        obj = self.catalogs.latest.get(catalog) or {}
        return str((obj.get("status") or {}).get("contentDigest") or "")

    # -- one change ----------------------------------------------------------------------------

    def change(
        self,
        *,
        source: str,
        catalog: str,
        resolution: str,
        packages: Mapping[str, str],
        workload: str,
        revision: int,
    ) -> dict[str, float | None]:
        """Publish new versions through ``source``, wait until the Resolution is Ready on
        ``revision``, and return the seconds of each step (``detected`` from t0, the others
        from detection) and the daemon's CPU seconds (``cpu``)."""
        assert self.catalogs is not None
        assert self.resolutions is not None
        assert self.children is not None
        assert self.revisions is not None
        before = self.digest(catalog)
        mark = time.monotonic()
        ticks = self.daemon.cpu_ticks()
        t0 = self.offer(source, packages, workload)
        self.catalogs.wait(
            lambda objs: _moved(objs.get(catalog), before),
            what=f"Catalog {catalog} to show new content",
        )
        self.wait_ready(resolution, revision)
        cpu = (self.daemon.cpu_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
        detected = first(
            self.catalogs.since(mark),
            mark,
            lambda o: o["metadata"]["name"] == catalog and _moved(o, before),
        )
        assert detected is not None
        marks = pivot_marks(
            detected=detected,
            resolutions=self.resolutions.since(mark),
            config_maps=self.revisions.since(mark),
            children=self.children.snapshot(),
            name=resolution,
            revision=revision,
            count=len(packages),
            deployments=self.deployments.since(mark) if self.deployments else (),
            workloads=list(packages) if workload == "deployment" else (),
            version=next(iter(packages.values())),
        )
        return {"detected": detected - t0, **marks, "cpu": cpu}

    def floor(self, packages: Mapping[str, str], workload: str) -> float:
        """Seconds the API server itself needs for what a pivot of ``packages`` installs: the
        same objects (named ``<package>-floor``) applied by up to 8 parallel
        ``kubectl apply --server-side`` processes, then, for Deployments, until each has rolled
        out (its new pod template available), read by watch as for the pivot."""
        assert self.deployments is not None
        files = []
        for package, version in packages.items():
            path = self.work / f"floor-{package}.yaml"
            path.write_text(_manifest(workload, f"{package}-floor", version))
            files.append(path)
        shards = [files[i::FLOOR_SHARDS] for i in range(min(FLOOR_SHARDS, len(files)))]
        kubectl = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "apply", "--server-side"]
        mark = time.monotonic()
        processes = [
            subprocess.Popen(
                [*kubectl, "--field-manager", "bench-floor", *(f"-f={f}" for f in shard)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for shard in shards
        ]
        for process in processes:
            _, err = process.communicate(timeout=WAIT)
            assert process.returncode == 0, err.decode()
        applied = time.monotonic()
        if workload != "deployment":
            return applied - mark
        version = next(iter(packages.values()))
        names = [f"{p}-floor" for p in packages]
        self.deployments.wait(
            lambda objs: all(n in objs and rolled_out(objs[n], version) for n in names),
            what="the floor's Deployments to roll out",
        )
        done, _ = rollouts(self.deployments.since(mark), names, version)
        assert done is not None
        return done - mark

    def stop(self) -> None:
        """End every watch."""
        recorders = (self.catalogs, self.resolutions, self.children, self.revisions)
        for recorder in (*recorders, self.deployments):
            if recorder is not None:
                recorder.stop()


def _moved(obj: Mapping[str, Any] | None, before: str) -> bool:
    digest = ((obj or {}).get("status") or {}).get("contentDigest")
    return bool(digest) and digest != before


# ---------------------------------------------------------------------------- measurements


def detection(bench: Bench, kind: str, runs: int, interval: float) -> list[dict[str, float | None]]:
    """Detection latency for one source kind (a one-bundle Resolution on it)."""
    name = f"detect-{kind.lower()}"
    package = f"det-{kind.lower()}"
    bench.offer(kind, {package: "1.0.0"}, "configmap")
    bench.catalog(name, kind, interval)
    bench.resolution(name, name, [package])
    bench.wait_ready(name, 1)
    results = []
    try:
        for run in range(1, runs + 1):
            # A random phase against the poll timer: detection is uniform over the interval.
            time.sleep(bench.rng.uniform(0, interval))
            results.append(
                bench.change(
                    source=kind,
                    catalog=name,
                    resolution=name,
                    packages={package: f"1.0.{run}"},
                    workload="configmap",
                    revision=run + 1,
                )
            )
            print(f"  {kind} run {run}: {_brief(results[-1])}", file=sys.stderr)
    finally:
        bench.remove(name, name)
    return results


def group_pivot(
    bench: Bench, workload: str, runs: int, interval: float
) -> tuple[float, list[dict[str, float | None]]]:
    """The 10-bundle grouped pivot: the first install's seconds and each change's steps."""
    name = f"group-{workload}"
    packages = [f"{workload[:3]}-{i:02d}" for i in range(GROUP_SIZE)]
    bench.offer("http", dict.fromkeys(packages, "1.0.0"), workload)
    bench.catalog(name, "http", interval)
    assert bench.catalogs is not None
    bench.catalogs.wait(lambda objs: _moved(objs.get(name), ""), what=f"Catalog {name} serving")
    started = time.monotonic()
    bench.resolution(name, name, packages)
    bench.wait_ready(name, 1)
    install = time.monotonic() - started
    bench.floor(dict.fromkeys(packages, "1.0.0"), workload)  # created once; runs update them
    results = []
    try:
        for run in range(1, runs + 1):
            time.sleep(bench.rng.uniform(0, interval))
            outcome = bench.change(
                source="http",
                catalog=name,
                resolution=name,
                packages=dict.fromkeys(packages, f"1.0.{run}"),
                workload=workload,
                revision=run + 1,
            )
            # The same objects at the same version through kubectl: the floor of this run.
            outcome["floor"] = bench.floor(dict.fromkeys(packages, f"1.0.{run}"), workload)
            results.append(outcome)
            print(f"  {workload} run {run}: {_brief(outcome)}", file=sys.stderr)
    finally:
        bench.remove(name, name)
    return install, results


def _brief(result: Mapping[str, float | None]) -> str:
    return ", ".join(f"{k} {v:.2f}" for k, v in result.items() if v is not None)


# ---------------------------------------------------------------------------- main


@contextlib.contextmanager
def running(args: argparse.Namespace, work: Path) -> Iterator[Bench]:
    """Start everything the bench needs (cluster, registry, catalog server, daemon)."""
    with contextlib.ExitStack() as stack:
        if args.kubeconfig:
            kubeconfig = args.kubeconfig
        else:
            cluster = TestCluster.start()
            stack.callback(cluster.stop)
            kubeconfig = cluster.kubeconfig
        api_client = load_client(kubeconfig=str(kubeconfig))
        stack.callback(api_client.close)
        kube = Kube(api_client)
        crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
        Applier(KubeAPI(api_client), Owner("Bench", "crds")).apply(crds)
        for namespace in (SYSTEM, APPS):
            with contextlib.suppress(KubeError):
                kube.create(
                    NAMESPACES,
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                )
        registry = stack.enter_context(run_registry(work / "registry"))
        served = work / "served"
        served.mkdir()
        grpc_port, http_port = _free_port(), _free_port()
        server_log = (work / "catalog-serve.log").open("wb")
        stack.callback(server_log.close)
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", "pivoter.cli.main", "catalog", "serve", str(served)),
                *("--name", "bench", "--grpc-port", str(grpc_port)),
                *("--http-port", str(http_port), "--poll-interval", "0.1"),
            ],
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(_stop_process, server)
        daemon = Daemon(
            kubeconfig,
            namespace=SYSTEM,
            store_dir=work / "store",
            log=work / "daemon.log",
            webhook=False,
        )
        stack.callback(daemon.stop)
        daemon.start()
        bench = Bench(
            kube,
            work,
            Path(kubeconfig),
            registry.host,
            daemon,
            server_url=f"http://127.0.0.1:{http_port}/catalogs/bench",
            server_address=f"127.0.0.1:{grpc_port}",
            rng=random.Random(args.seed),
        )
        stack.callback(bench.stop)
        bench.catalogs = Recorder(kube, CATALOGS)
        bench.resolutions = Recorder(kube, RESOLUTIONS)
        bench.children = Recorder(kube, BDS)
        bench.revisions = Recorder(kube, CONFIG_MAPS, SYSTEM, selector=INPUT_NAME_LABEL)
        bench.deployments = Recorder(kube, DEPLOYMENTS, APPS)
        try:
            yield bench
        except BaseException:
            print(f"daemon log (end):\n{daemon.tail()}", file=sys.stderr)
            raise


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurements the arguments ask for and print the tables."""
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pivoter-bench-pivot-"))
    detections: dict[str, list[dict[str, float | None]]] = {}
    pivots: dict[str, list[dict[str, float | None]]] = {}
    installs: dict[str, float] = {}
    try:
        with running(args, work) as bench:
            if not args.skip_detection:
                for kind in args.kinds:
                    print(f"detection: {kind}", file=sys.stderr)
                    detections[kind] = detection(bench, kind, args.runs, args.poll_interval)
            if not args.skip_pivot:
                workloads = WORKLOADS if args.workload == "both" else (args.workload,)
                for workload in workloads:
                    print(f"group pivot: {workload}", file=sys.stderr)
                    installs[workload], pivots[workload] = group_pivot(
                        bench, workload, args.runs, args.pivot_poll_interval
                    )
    finally:
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for log in work.glob("*.log"):
                shutil.copy(log, args.keep_logs / log.name)
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"median (min-max) of {args.runs} runs\n"
    )
    if detections:
        print("\n".join(detection_table(args.poll_interval, detections)) + "\n")
    if pivots:
        print(
            f"Group pivot of {GROUP_SIZE} bundles, Catalog over HTTP polled every "
            f"{args.pivot_poll_interval:g} s:\n"
        )
        print("\n".join(pivot_table(pivots)) + "\n")
        print("| workload | first install: create → Ready s | daemon CPU s per pivot |")
        print("|---|---|---|")
        for workload, runs in pivots.items():
            print(f"| {workload} | {installs[workload]:.2f} | {_cell_of(runs, 'cpu')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
