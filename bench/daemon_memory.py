"""Benchmark: the daemon's memory and CPU with the ten real registry+v1 bundles plus N generated
plain BundleDeployments (each a Deployment, Service, ConfigMap and Role in its own namespace)
installed and watched (drift correction keeps one shared informer per managed kind).

A real ``pivoter run`` process runs against a private control plane (``tests.cluster``) or the
cluster of ``--kubeconfig``; its ``VmRSS``/``VmHWM`` are read from ``/proc`` once everything is
Installed, then (after ``--warmup`` seconds) sampled every 5 s for ``--settle`` seconds while
nothing changes (median reported), with the CPU time used in that window.

``--profile OUT`` runs ``py-spy record`` (``--py-spy``, a py-spy installed outside the repo) on
the daemon during that window and writes the collapsed stacks to OUT (py-spy's sampling costs the
daemon some CPU: take the CPU figure from a run without it).

Usage: python bench/daemon_memory.py [--generated 200] [--warmup 0] [--settle 60]
       [--kubeconfig FILE] [--profile OUT --py-spy PATH]
Prints a Markdown table for docs/benchmarks/daemon-memory.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pivoter.kube import Kube, Resource, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.cluster import TestCluster  # noqa: E402
from tests.registry_v1.helpers import real_bundles  # noqa: E402

BDS = Resource("core.rukpak.io/v1alpha1", "BundleDeployment", "bundledeployments", False)
CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)
SYSTEM = "pivoter-system"
MASTER_ONLY = {"community-windows-machine-config-operator"}


def _status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024  # MiB
    return fields


def _cpu_seconds(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def _config_map(kube: Kube, name: str, files: dict[str, str]) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": files,
        "immutable": True,
    }
    kube.create(CONFIG_MAPS, body, SYSTEM)
    return {"configMap": {"name": name}}


def _bd(kube: Kube, name: str, sources: list[dict[str, Any]], cls: str, **spec: Any) -> None:
    kube.create(
        BDS,
        {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": name},
            "spec": {
                "provisionerClassName": cls,
                "template": {
                    "spec": {
                        "provisionerClassName": cls,
                        "source": {"type": "configMaps", "configMaps": sources},
                    }
                },
                **spec,
            },
        },
    )


def _generated(namespace: str) -> dict[str, str]:
    labels = {"app": namespace}
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "app", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "app", "image": "example.com/app:1"}]},
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "app", "namespace": namespace},
            "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config", "namespace": namespace},
            "data": {"setting": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "app", "namespace": namespace},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
        },
    ]
    return {f"o{i}.yaml": yaml.safe_dump(o) for i, o in enumerate(objects)}


def _installed(kube: Kube, names: list[str]) -> int:
    done = 0
    for bd in kube.list(BDS)[0]:
        if bd["metadata"]["name"] not in names:
            continue
        for c in (bd.get("status") or {}).get("conditions") or []:
            if c["type"] == "Installed" and c["status"] == "True":
                done += 1
    return done


def run(
    kubeconfig: Path,
    generated: int,
    settle: float,
    work: Path,
    *,
    warmup: float = 0.0,
    profile: list[str] | None = None,
) -> dict[str, Any]:
    api_client = load_client(kubeconfig=str(kubeconfig))
    kube = Kube(api_client)
    crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
    Applier(KubeAPI(api_client), Owner("Bench", "crds")).apply(crds)
    kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}})
    daemon = subprocess.Popen(
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
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "daemon.log", "wb"),  # noqa: SIM115 - lives as long as the daemon
    )
    try:
        time.sleep(3)
        base = _status(daemon.pid)
        names: list[str] = []
        for package, root in sorted(real_bundles().items()):
            sources = []
            for part in ("manifests", "metadata"):
                files = {p.name: p.read_text() for p in sorted((root / part).iterdir())}
                source = _config_map(kube, f"rv1-{package[:40]}-{part[:4]}", files)
                sources.append({**source, "path": part})
            namespace = f"rv1-{package[:40]}"
            kube.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
            config: dict[str, Any] = {"installNamespace": namespace}
            if package in MASTER_ONLY:
                config["deploymentConfig"] = {"nodeSelector": {"kubernetes.io/os": "linux"}}
            name = f"rv1-{len(names)}"
            _bd(kube, name, sources, "core-rukpak-io-registry", config=config)
            names.append(name)
        start = time.monotonic()
        for i in range(generated):
            source = _config_map(kube, f"gen-{i}", _generated(f"gen-{i}"))
            _bd(kube, f"gen-{i}", [{**source, "path": "manifests"}], "core-rukpak-io-plain")
            names.append(f"gen-{i}")
        deadline = time.monotonic() + 900
        while (done := _installed(kube, names)) < len(names):
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {done} of {len(names)} BundleDeployments Installed")
            time.sleep(2)
        installed_after = time.monotonic() - start
        peak_after_install = _status(daemon.pid)
        time.sleep(warmup)
        profiler = None
        if profile:
            profiler = subprocess.Popen(
                [
                    *(profile[0], "record", "--pid", str(daemon.pid)),
                    *("--duration", str(int(settle)), "--rate", "50"),
                    *("--format", "raw", "--output", profile[1]),
                ]
            )
        cpu_before = _cpu_seconds(daemon.pid)
        samples = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < settle:
            time.sleep(5)
            samples.append(_status(daemon.pid)["VmRSS"])
        cpu = _cpu_seconds(daemon.pid) - cpu_before
        if profiler is not None:
            profiler.wait(60)
        return {
            "bundle_deployments": len(names),
            "installed_after_s": round(installed_after, 1),
            "rss_start_mib": base["VmRSS"],
            "rss_installed_mib": peak_after_install["VmRSS"],
            "rss_steady_median_mib": statistics.median(samples),
            "peak_mib": _status(daemon.pid)["VmHWM"],
            "idle_cpu_percent": round(100 * cpu / (time.monotonic() - t0), 2),
        }
    finally:
        daemon.terminate()
        try:
            daemon.wait(30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        api_client.close()  # type: ignore[no-untyped-call]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=200)
    parser.add_argument("--warmup", type=float, default=0.0, help="seconds to wait first")
    parser.add_argument("--settle", type=float, default=60.0)
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--profile", help="write py-spy's collapsed stacks of the window here")
    parser.add_argument("--py-spy", default="py-spy", help="the py-spy binary for --profile")
    args = parser.parse_args()
    profile = [args.py_spy, args.profile] if args.profile else None
    with tempfile.TemporaryDirectory(prefix="pivoter-bench-") as tmp:
        if args.kubeconfig:
            result = run(
                args.kubeconfig,
                args.generated,
                args.settle,
                Path(tmp),
                warmup=args.warmup,
                profile=profile,
            )
        else:
            cluster = TestCluster.start()
            try:
                result = run(
                    cluster.kubeconfig,
                    args.generated,
                    args.settle,
                    Path(tmp),
                    warmup=args.warmup,
                    profile=profile,
                )
            finally:
                cluster.stop()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print("| measurement | value |\n|---|---|")
    for key, value in result.items():
        print(f"| {key} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
