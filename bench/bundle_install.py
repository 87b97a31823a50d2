"""Benchmark: BundleDeployment create -> Installed through ``pivoter run``, and idle CPU after.

For plain bundles of 10, 100 and 1000 objects (a Namespace, three CRDs and ConfigMaps, served as
an http tar.gz from loopback), each run creates a BundleDeployment on a running daemon and polls
until ``Installed=True`` (then deletes it and waits for the uninstall). Reported: median wall time
from create to Installed over ``--runs`` runs, and objects applied per second. Then the daemon's
CPU time over ``--idle`` seconds with nothing to do, read from ``/proc/<pid>/stat`` (utime+stime).

The daemon runs as a subprocess (:class:`tests.e2e.daemon.Daemon`: content server, admission
webhook by URL, a temporary store) against a private control plane started for the benchmark
(``tests.cluster.TestCluster``), or the cluster of ``--kubeconfig``.

With ``--profile N`` no daemon is started: the Bundle and BundleDeployment reconcilers run in this
process under cProfile (the controllers' workers are threads, which cProfile does not follow) for
one install of N objects, and the functions with the most cumulative and own time are printed.

Usage: python bench/bundle_install.py [--runs 3] [--sizes 10,100,1000] [--idle 60]
       [--kubeconfig FILE] [--profile N]
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import io
import os
import platform
import statistics
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS  # noqa: E402
from pivoter.kube import Kube, NotFound, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.e2e.daemon import Daemon  # noqa: E402


def bundle_tgz(objects: int, run: str) -> bytes:
    """A plain bundle of ``objects`` objects: Namespace, 3 CRDs, ConfigMaps."""
    namespace = f"bench-{run}"
    docs: list[dict[str, object]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    ]
    for i in range(3):
        group = f"g{i}.{run}.bench.pivoter.io"
        docs.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"things.{group}"},
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
            }
        )
    for i in range(objects - len(docs)):
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:04d}", "namespace": namespace},
                "data": {"index": str(i), "payload": "x" * 64},
            }
        )
    manifest = yaml.safe_dump_all(docs).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        directory = tarfile.TarInfo("manifests")
        directory.type = tarfile.DIRTYPE
        directory.mode = 0o755
        archive.addfile(directory)
        info = tarfile.TarInfo("manifests/objects.yaml")
        info.size = len(manifest)
        archive.addfile(info, io.BytesIO(manifest))
    return gzip.compress(buffer.getvalue(), mtime=0)


class Files(http.server.BaseHTTPRequestHandler):
    """Serves :data:`FILES` on loopback (the http source)."""

    files: dict[str, bytes] = {}

    def do_GET(self) -> None:
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *_: object) -> None:
        pass


def installed(bd: dict[str, object]) -> bool:
    status = bd.get("status") or {}
    assert isinstance(status, dict)
    for c in status.get("conditions") or []:
        if c["type"] == "Installed":
            return bool(c["status"] == "True")
    return False


def deployment_body(name: str, url: str) -> dict[str, object]:
    """A plain BundleDeployment of the tarball at ``url`` (its CRDs go on uninstall)."""
    return {
        "apiVersion": "core.rukpak.io/v1alpha1",
        "kind": "BundleDeployment",
        "metadata": {"name": name},
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "crdDeletionPolicy": "Delete",
            "template": {
                "spec": {
                    "provisionerClassName": "core-rukpak-io-plain",
                    "source": {"type": "http", "http": {"url": url}},
                }
            },
        },
    }


def one_run(kube: Kube, base_url: str, objects: int, run: str) -> float:
    """Seconds from create to Installed; uninstalls afterwards."""
    Files.files[f"/{run}.tgz"] = bundle_tgz(objects, run)
    name = f"bench-{run}"
    body = deployment_body(name, f"{base_url}/{run}.tgz")
    start = time.monotonic()
    kube.create(BUNDLE_DEPLOYMENTS, body)
    while True:
        bd = kube.get(BUNDLE_DEPLOYMENTS, name)
        if installed(bd):
            elapsed = time.monotonic() - start
            break
        if time.monotonic() - start > 600:
            raise RuntimeError(f"{name} not Installed after 600 s: {bd.get('status')}")
        time.sleep(0.05)
    kube.delete(BUNDLE_DEPLOYMENTS, name)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            kube.get(BUNDLE_DEPLOYMENTS, name)
        except NotFound:
            break
        time.sleep(0.2)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument(
        "--profile", type=int, metavar="N", help="profile one in-process install of N objects"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from tests.cluster import TestCluster

    handle = TestCluster.existing(args.kubeconfig) if args.kubeconfig else TestCluster.start()
    work = Path(tempfile.mkdtemp(prefix="bench-bundles-"))
    kube = Kube(load_client(kubeconfig=str(handle.kubeconfig)))
    daemon = None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
        Applier(KubeAPI(handle.api_client()), Owner("Bench", "crds")).apply(crds)
        namespaces = kube.resource("v1", "Namespace")
        system = f"bench-system-{os.getpid()}"
        kube.create(
            namespaces, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": system}}
        )
        time.sleep(2)  # CRDs Established
        daemon = Daemon(
            handle.kubeconfig,
            namespace=system,
            store_dir=work / "store",
            log=work / "pivoter.log",
        )
        if args.profile:
            profile_install(kube, base_url, args.profile, system, work)
            return 0
        daemon.start()
        results: dict[int, list[float]] = {}
        for size in sizes:
            for run in range(args.runs):
                seconds = one_run(kube, base_url, size, f"n{size}-r{run}-{os.getpid()}")
                results.setdefault(size, []).append(seconds)
                print(f"  {size:5d} objects, run {run + 1}: {seconds:.2f} s", file=sys.stderr)
        time.sleep(5)  # let the last uninstall's events settle
        ticks = os.sysconf("SC_CLK_TCK")
        idle: list[float] = []
        for _ in range(args.runs if args.idle else 0):
            before = daemon.cpu_ticks()
            time.sleep(args.idle)
            idle.append((daemon.cpu_ticks() - before) / ticks)
        idle_cpu = statistics.median(idle) if idle else 0.0
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.platform()}, Python {platform.python_version()}"
        )
        print(f"runs per size: {args.runs} (median)\n")
        print("| objects | create -> Installed (median) | min | max | objects/s |")
        print("|--------:|-----------------------------:|----:|----:|----------:|")
        for size, values in results.items():
            median = statistics.median(values)
            print(
                f"| {size} | {median:.2f} s | {min(values):.2f} s | {max(values):.2f} s "
                f"| {size / median:.0f} |"
            )
        if idle:
            print(
                f"\nidle CPU per {args.idle:.0f} s window after the runs (median of "
                f"{len(idle)}: {', '.join(f'{v:.2f}' for v in idle)}): {idle_cpu:.2f} CPU-s "
                f"({100 * idle_cpu / args.idle:.2f} % of one core)"
            )
        kube.delete(namespaces, system)
    finally:
        if daemon is not None:
            daemon.stop(kube)
        server.shutdown()
        handle.stop()
    return 0


def profile_install(kube: Kube, base_url: str, objects: int, system: str, work: Path) -> None:
    """One install of ``objects`` objects by the reconcilers, in this thread, under cProfile."""
    import cProfile
    import pstats

    from pivoter.apis.resources import BUNDLES
    from pivoter.controllers.bundle import BundleReconciler
    from pivoter.controllers.bundledeployment import BundleDeploymentReconciler
    from pivoter.pivot import keep_on_delete
    from provisioners.store import BundleStore

    store = BundleStore(work / "profile-store")
    bundles = BundleReconciler(kube, store, system_namespace=system)
    deployments = BundleDeploymentReconciler(kube, store, bundles, keep_on_delete=keep_on_delete)
    run = f"profile-{os.getpid()}"
    Files.files[f"/{run}.tgz"] = bundle_tgz(objects, run)
    name = f"bench-{run}"
    kube.create(BUNDLE_DEPLOYMENTS, deployment_body(name, f"{base_url}/{run}.tgz"))
    profiler = cProfile.Profile()
    start = time.monotonic()
    profiler.enable()
    for _ in range(20):
        deployments.reconcile(name)
        for bundle in kube.list(BUNDLES)[0]:
            if (bundle["metadata"].get("labels") or {}).get("core.rukpak.io/owner-name") == name:
                bundles.reconcile(bundle["metadata"]["name"])
        deployments.reconcile(name)
        if installed(kube.get(BUNDLE_DEPLOYMENTS, name)):
            break
    profiler.disable()
    print(f"in-process install of {objects} objects: {time.monotonic() - start:.2f} s")
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(30)
    stats.sort_stats("tottime").print_stats(15)
    kube.merge_patch(BUNDLE_DEPLOYMENTS, name, {"metadata": {"finalizers": None}})
    kube.delete(BUNDLE_DEPLOYMENTS, name)


if __name__ == "__main__":
    sys.exit(main())
