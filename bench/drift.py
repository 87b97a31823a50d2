"""Benchmark: drift restoration latency through a running manager (p50/p99 over N deletions).

A plain BundleDeployment installs a ConfigMap, a Deployment and a CRD with the provisioning
controllers running in this process (:func:`pivoter.controllers.provisioning.setup` on a
:class:`~pivoter.runtime.manager.Manager`, as ``pivoter run`` wires them). Then, ``--deletions``
times, the managed ConfigMap is deleted and the clock runs until a GET finds it again (polled
every 5 ms); the daemon learns of the deletion from its shared informer, queues the
BundleDeployment, detects the drift and re-applies. Reported: p50, p90, p99 and max.

The control plane is a private one started for the benchmark (``tests.cluster.TestCluster``),
or the cluster of ``--kubeconfig``.

Usage: python bench/drift.py [--deletions 100] [--kubeconfig FILE]
Prints a Markdown table for docs/benchmarks/drift.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pivoter.kube import Kube, NotFound, Resource, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.cluster import TestCluster, session_labels, unique_name  # noqa: E402
from tests.drift.running import running_pivoter  # noqa: E402

CONFIG_MAPS = Resource("v1", "ConfigMap", "configmaps", namespaced=True)
NAMESPACES = Resource("v1", "Namespace", "namespaces", namespaced=False)


def _objects(namespace: str, group: str) -> list[dict[str, Any]]:
    labels = {"app": "bench-drift"}
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "watched", "namespace": namespace},
            "data": {"k": "v"},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bench-drift", "namespace": namespace},
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
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things.{group}", "labels": session_labels()},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"kind": "Thing", "plural": "things", "singular": "thing"},
                "versions": [
                    {
                        "name": "v1",
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        },
    ]


def _percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def measure(kubeconfig: Path, deletions: int) -> list[float]:
    """Install once, then delete the managed ConfigMap ``deletions`` times; seconds each."""
    kube = Kube(load_client(kubeconfig=str(kubeconfig)))
    crds = [
        yaml.safe_load((ROOT / "crds" / n).read_text())
        for n in ("core.rukpak.io_bundles.yaml", "core.rukpak.io_bundledeployments.yaml")
    ]
    Applier(KubeAPI(kube.api_client), Owner("Bench", "rukpak-crds")).apply(crds)
    namespace = unique_name("bench-drift")
    kube.create(
        NAMESPACES,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "labels": session_labels()},
        },
    )
    samples: list[float] = []
    try:
        with (
            tempfile.TemporaryDirectory() as store,
            running_pivoter(kubeconfig, Path(store), namespace, session_labels()) as pivoter,
        ):
            name = unique_name("bench")
            group = f"{unique_name('g')}.bench.pivoter.io"
            sources = pivoter.plain_bundle(unique_name("content"), _objects(namespace, group))
            pivoter.bundle_deployment(name, sources, crdDeletionPolicy="Delete")
            pivoter.wait(name, "Healthy", "True", timeout=120)
            for _ in range(deletions):
                kube.delete(CONFIG_MAPS, "watched", namespace)
                start = time.perf_counter()
                while True:
                    try:
                        kube.get(CONFIG_MAPS, "watched", namespace)
                        break
                    except NotFound:
                        time.sleep(0.005)
                    if time.perf_counter() - start > 30:
                        raise SystemExit("the ConfigMap was not restored within 30 s")
                samples.append(time.perf_counter() - start)
            corrected = pivoter.events(name, "DriftCorrected")
            print(
                f"DriftCorrected Events: {len(corrected)} (a series counts repeats)",
                file=sys.stderr,
            )
    finally:
        kube.delete(NAMESPACES, namespace)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deletions", type=int, default=100)
    parser.add_argument("--kubeconfig", type=Path, default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    cluster = None if args.kubeconfig else TestCluster.start()
    try:
        kubeconfig = args.kubeconfig or cluster.kubeconfig  # type: ignore[union-attr]
        samples = measure(kubeconfig, args.deletions)
    finally:
        if cluster is not None:
            cluster.stop()
    ms = [s * 1000 for s in samples]
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, {len(ms)} deletions.\n")
    print("| deletions | p50 ms | p90 ms | p99 ms | max ms | mean ms |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {len(ms)} | {_percentile(ms, 50):.0f} | {_percentile(ms, 90):.0f} | "
        f"{_percentile(ms, 99):.0f} | {max(ms):.0f} | {statistics.mean(ms):.0f} |"
    )


if __name__ == "__main__":
    main()
