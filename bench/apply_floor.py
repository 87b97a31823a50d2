"""Benchmark: a BundleDeployment install vs ``kubectl apply --server-side`` of the same objects.

One run measures, on freshly generated objects (new names and a new Namespace for every
measurement, so nothing is a no-op), interleaved round by round (the order rotates each round):

- **bd**: create a plain BundleDeployment of the objects (a tar.gz over http on loopback) on a
  running ``pivoter run`` (:class:`tests.e2e.daemon.Daemon`) -> ``Installed=True``, as
  ``bench/bundle_install.py`` does; from the bench's clock, split into Bundle ``Unpacked`` and
  the rest;
- **applier**: the same objects through :class:`provisioners.apply.applier.Applier` in this
  process (no controllers, unpack or status: the apply alone);
- **kubectl**: one ``kubectl apply --server-side -f`` of the objects;
- **8 shards**: the Namespace and CRDs by one ``kubectl apply --server-side``, then the other
  objects split round-robin into 8 files applied by 8 parallel ``kubectl`` processes (the API
  server's floor on this machine; kubectl's own start-up included, as in the issue).

After each measurement the objects are deleted and the bench waits until the Namespace and CRDs
are gone, so no deletion runs during the next measurement. ``--mix configmaps`` is a Namespace,
three CRDs and ConfigMaps (as ``bench/bundle_install.py``); ``--mix workload`` is a Namespace,
three CRDs and, in turn, ServiceAccounts, Roles, RoleBindings, Services, Deployments (0 replicas:
no pods), ConfigMaps and Secrets. Medians over ``--rounds``.

Usage: python bench/apply_floor.py [--objects 1000] [--rounds 5] [--mix configmaps|workload]
       [--only bd,applier,kubectl,shards] [--kubeconfig FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.bundle_install import Files, deployment_body, installed  # noqa: E402
from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, BUNDLES  # noqa: E402
from pivoter.kube import Kube, NotFound, load_client  # noqa: E402
from provisioners.apply.applier import APPLY_CONCURRENCY, Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from tests.e2e.daemon import Daemon  # noqa: E402

KUBECTL = Path(os.environ.get("PIVOTER_TOOLS_DIR", Path.home() / ".cache/pivoter/bin")) / "kubectl"
SHARDS = 8
Object = dict[str, Any]


def generate(run: str, count: int, mix: str) -> list[Object]:
    """``count`` objects named after ``run``: Namespace ``bench-<run>``, three CRDs, the rest."""
    namespace = f"bench-{run}"
    docs: list[Object] = [
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
    makers = [_configmap] if mix == "configmaps" else WORKLOAD
    for i in range(count - len(docs)):
        docs.append(makers[i % len(makers)](f"o-{i:04d}", namespace, i))
    return docs


def _configmap(name: str, namespace: str, i: int) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"index": str(i), "payload": "x" * 64},
    }


def _secret(name: str, namespace: str, i: int) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"token": f"t-{i}"},
    }


def _service_account(name: str, namespace: str, _: int) -> Object:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(name, namespace)}


def _role(name: str, namespace: str, _: int) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(name, namespace),
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }


def _role_binding(name: str, namespace: str, _: int) -> Object:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }


def _service(name: str, namespace: str, _: int) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(name, namespace),
        "spec": {"selector": {"app": name}, "ports": [{"port": 80, "targetPort": 8080}]},
    }


def _deployment(name: str, namespace: str, _: int) -> Object:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace),
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": name,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example/app:1.0",
                            "ports": [{"containerPort": 8080}],
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ],
                },
            },
        },
    }


def _meta(name: str, namespace: str) -> Object:
    return {"name": name, "namespace": namespace, "labels": {"app": name}}


WORKLOAD: list[Callable[[str, str, int], Object]] = [
    _service_account,
    _role,
    _role_binding,
    _service,
    _deployment,
    _configmap,
    _secret,
]


def manifest(objects: list[Object]) -> bytes:
    return yaml.safe_dump_all(objects).encode()


def bundle_tgz(objects: list[Object]) -> bytes:
    import gzip
    import io
    import tarfile

    data = manifest(objects)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        directory = tarfile.TarInfo("manifests")
        directory.type = tarfile.DIRTYPE
        directory.mode = 0o755
        archive.addfile(directory)
        info = tarfile.TarInfo("manifests/objects.yaml")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


class Bench:
    """The cluster, the daemon and the temporary files of one benchmark run."""

    def __init__(self, kubeconfig: Path, kube: Kube, base_url: str, work: Path) -> None:
        self.kubeconfig = kubeconfig
        self.kube = kube
        self.base_url = base_url
        self.work = work
        self.splits: dict[str, list[float]] = {}
        self.concurrency = APPLY_CONCURRENCY
        self.daemon: Daemon | None = None

    # -- the four measurements -----------------------------------------------------------------

    def bd(self, run: str, objects: list[Object]) -> float:
        Files.files[f"/{run}.tgz"] = bundle_tgz(objects)
        name = f"bench-{run}"
        # Watches, not polling: the bench adds no load while the daemon works.
        _, bd_version = self.kube.list(BUNDLE_DEPLOYMENTS, field_selector=f"metadata.name={name}")
        _, bundle_version = self.kube.list(
            BUNDLES, label_selector=f"core.rukpak.io/owner-name={name}"
        )
        seen: dict[str, float] = {}
        unpacked = threading.Thread(
            target=_first,
            args=(self.kube, BUNDLES, bundle_version, seen, "unpacked", _is_unpacked),
            kwargs={"label_selector": f"core.rukpak.io/owner-name={name}"},
            daemon=True,
        )
        unpacked.start()
        ticks = self.daemon.cpu_ticks() if self.daemon is not None else 0
        start = time.monotonic()
        self.kube.create(BUNDLE_DEPLOYMENTS, deployment_body(name, f"{self.base_url}/{run}.tgz"))
        _first(
            self.kube,
            BUNDLE_DEPLOYMENTS,
            bd_version,
            seen,
            "installed",
            installed,
            field_selector=f"metadata.name={name}",
        )
        if self.daemon is not None:
            used = (self.daemon.cpu_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
            self.splits.setdefault("(a) CPU of pivoter run, create -> Installed", []).append(used)
        unpacked.join(600)
        elapsed = seen["installed"] - start
        split = seen.get("unpacked", start) - start
        self.splits.setdefault("(a) split: create -> Bundle Unpacked", []).append(split)
        self.splits.setdefault("(a) split: Unpacked -> Installed", []).append(elapsed - split)
        self.kube.delete(BUNDLE_DEPLOYMENTS, name)
        _wait_gone(lambda: self.kube.get(BUNDLE_DEPLOYMENTS, name))
        self.cleanup(objects)
        return elapsed

    def applier(self, run: str, objects: list[Object]) -> float:
        api = KubeAPI(load_client(kubeconfig=str(self.kubeconfig)))
        applier = Applier(api, Owner("Bench", run), concurrency=self.concurrency)
        start, cpu = time.monotonic(), time.process_time()
        applier.apply(objects)
        elapsed = time.monotonic() - start
        self.splits.setdefault("applier: CPU of this process", []).append(time.process_time() - cpu)
        self.cleanup(objects)
        return elapsed

    def kubectl(self, run: str, objects: list[Object]) -> float:
        path = self.work / f"{run}.yaml"
        path.write_bytes(manifest(objects))
        start = time.monotonic()
        self._kubectl_apply([path])
        elapsed = time.monotonic() - start
        self.cleanup(objects)
        return elapsed

    def shards(self, run: str, objects: list[Object]) -> float:
        first = [o for o in objects if o["kind"] in ("Namespace", "CustomResourceDefinition")]
        rest = [o for o in objects if o["kind"] not in ("Namespace", "CustomResourceDefinition")]
        head = self.work / f"{run}-head.yaml"
        head.write_bytes(manifest(first))
        files = []
        for shard in range(SHARDS):
            path = self.work / f"{run}-{shard}.yaml"
            path.write_bytes(manifest(rest[shard::SHARDS]))
            files.append(path)
        start = time.monotonic()
        self._kubectl_apply([head])
        self._kubectl_apply(files)
        elapsed = time.monotonic() - start
        self.cleanup(objects)
        return elapsed

    def _kubectl_apply(self, files: list[Path]) -> None:
        argv = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "apply", "--server-side"]
        argv += ["--field-manager", "bench", "-o", "name", "-f"]
        processes = [
            subprocess.Popen([*argv, str(f)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for f in files
        ]
        for process in processes:
            _, err = process.communicate()
            if process.returncode:
                raise RuntimeError(f"kubectl apply failed: {err.decode(errors='replace')}")

    # -- cleanup -------------------------------------------------------------------------------

    def cleanup(self, objects: list[Object]) -> None:
        """Delete the Namespace and CRDs (if left) and wait until they are gone."""
        namespaces = self.kube.resource("v1", "Namespace")
        crds = self.kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        targets = [
            (namespaces if o["kind"] == "Namespace" else crds, o["metadata"]["name"])
            for o in objects
            if o["kind"] in ("Namespace", "CustomResourceDefinition")
        ]
        for resource, name in targets:
            with contextlib.suppress(NotFound):
                self.kube.delete(resource, name)
        for resource, name in targets:
            _wait_gone(lambda r=resource, n=name: self.kube.get(r, n))  # type: ignore[misc]


def _is_unpacked(bundle: Object) -> bool:
    return bool((bundle.get("status") or {}).get("phase") == "Unpacked")


def _first(  # noqa: PLR0917
    kube: Kube,
    resource: Any,
    version: str,
    seen: dict[str, float],
    key: str,
    predicate: Callable[[Object], bool],
    **selectors: str,
) -> None:
    """Record in ``seen[key]`` when a watch first shows an object matching ``predicate``."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        for kind, obj in kube.watch(resource, resource_version=version, **selectors):
            version = obj["metadata"].get("resourceVersion") or version
            if kind in ("ADDED", "MODIFIED") and predicate(obj):
                seen[key] = time.monotonic()
                return
    raise RuntimeError(f"{key} not seen after 600 s")


def _wait_gone(get: Callable[[], object], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            get()
        except NotFound:
            return
        time.sleep(0.2)
    raise RuntimeError("not deleted after 600 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mix", choices=["configmaps", "workload"], default="configmaps")
    parser.add_argument("--only", default="bd,applier,kubectl,shards")
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument(
        "--concurrency",
        type=int,
        default=APPLY_CONCURRENCY,
        help="requests at a time of the in-process applier (the daemon's is APPLY_CONCURRENCY)",
    )
    args = parser.parse_args()
    kinds = args.only.split(",")

    import http.server

    from tests.cluster import TestCluster

    handle = TestCluster.existing(args.kubeconfig) if args.kubeconfig else TestCluster.start()
    work = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    kube = Kube(load_client(kubeconfig=str(handle.kubeconfig)))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bench = Bench(handle.kubeconfig, kube, f"http://127.0.0.1:{server.server_address[1]}", work)
    bench.concurrency = args.concurrency
    daemon = None
    system = f"bench-system-{os.getpid()}"
    namespaces = kube.resource("v1", "Namespace")
    try:
        if "bd" in kinds:
            crds = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]
            Applier(KubeAPI(handle.api_client()), Owner("Bench", "crds")).apply(crds)
            kube.create(
                namespaces, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": system}}
            )
            daemon = Daemon(
                handle.kubeconfig, namespace=system, store_dir=work / "store", log=work / "d.log"
            )
            daemon.start()
            bench.daemon = daemon
            bench.bd(f"warm-{os.getpid()}", generate(f"warm-{os.getpid()}", 20, args.mix))
        bench.kubectl(f"warmk-{os.getpid()}", generate(f"warmk-{os.getpid()}", 20, args.mix))
        bench.splits.clear()
        load = os.getloadavg()
        results: dict[str, list[float]] = {k: [] for k in kinds}
        for round_ in range(args.rounds):
            order = kinds[round_ % len(kinds) :] + kinds[: round_ % len(kinds)]
            for kind in order:
                run = f"{kind[:2]}{round_}-{os.getpid()}"
                seconds = getattr(bench, kind)(run, generate(run, args.objects, args.mix))
                results[kind].append(seconds)
                print(f"  round {round_ + 1} {kind:8s} {seconds:.2f} s", file=sys.stderr)
        print(
            f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}, "
            f"Python {platform.python_version()}; load average before: {load[0]:.2f}"
        )
        print(f"{args.objects} objects, mix {args.mix}, {args.rounds} rounds (median, min-max)\n")
        print("| measurement | median | min | max |")
        print("|---|--:|--:|--:|")
        labels = {
            "bd": "(a) BundleDeployment create -> Installed (pivoter run)",
            "applier": f"Applier.apply alone (in process, {args.concurrency} at a time)",
            "kubectl": "(b) one kubectl apply --server-side",
            "shards": f"(c) {SHARDS} parallel kubectl apply --server-side",
        }
        rows = [(labels[k], v) for k, v in results.items()] + list(bench.splits.items())
        for label, values in rows:
            print(
                f"| {label} | {statistics.median(values):.2f} s | {min(values):.2f} s "
                f"| {max(values):.2f} s |"
            )
    finally:
        if daemon is not None:
            daemon.stop(kube)
            with contextlib.suppress(NotFound):
                kube.delete(namespaces, system)
        server.shutdown()
        handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
