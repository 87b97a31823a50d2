"""Benchmark: install N packages from scratch, three ways, on one catalog (issue 32, goal 1).

At each factor F (``--factors``, default 10: N = 100·F packages ``p0000``, ...), one registry
holds N registry+v1 bundle images, each a CSV with one Deployment (one replica, its
ServiceAccount and Role) and a ConfigMap, **OwnNamespace** only (the one install mode in which
OLM v0 copies no CSV into other namespaces: its best case at this scale), and one catalog image
names them all (FBC). Then, each on a fresh private control plane (``tests.cluster.TestCluster``:
etcd, kube-apiserver with its watch cache, kube-controller-manager, kwok's simulated node, so
Deployments roll out), one after the other in the same run (``--variants``):

* ``resolutions``: ``pivoter run`` (``--leader-elect``, info logs, ``--concurrent``), a
  ``Catalog`` of the catalog image, and N ``Resolution``s, one package each, installed into the
  package's Namespace; done when each is Ready on revision 1 (its child Installed and Healthy);
* ``clusterextensions``: ``pivoter run --olmv1=serve`` with OLM v1's CRDs, a ``ClusterCatalog``
  of the same image, and N ``ClusterExtension``s as OLM v1's users write them
  (``spec.namespace``, ``source.catalog.packageName``, no service account); done when each is
  ``Installed``;
* ``olmv0``: OLM v0's olm-operator and catalog-operator (``hack/tools/olm.sh``, as
  tests/olmv0/peer.py runs them), a grpc ``CatalogSource`` in ``olm`` reading ``opm serve`` of the
  same packages with every manifest inline (an unpack Job's pod would not run on a simulated
  node: OLM v0 is spared pulling the bundles), an OperatorGroup per Namespace targeting it, and N
  ``Subscription``s; done when each CSV is ``Succeeded``. It is stopped at ``--peer-factor``
  (default 2) times the slower pivoter variant of the run, and how far it got is reported;
* ``flux``: Flux's source-controller and helm-controller (``hack/tools.sh optional/flux``: built
  from source, helm-controller is not served by the module proxy), as the Flux benchmark runs
  them (``--concurrent 10`` each), one ``OCIRepository`` of a Helm chart holding the same objects
  (ServiceAccount, Role and RoleBinding, Deployment, ConfigMap) pushed to the same registry, and
  N ``HelmRelease``s (``chartRef``), one per Namespace; done when each is Ready (Helm's wait:
  the Deployment available).

The Namespaces (and OLM v0's OperatorGroups, until OLM v0 has synced every one) are made before
the clock starts, with a second simulated node with room for N pods (the cluster's own takes the
kubelet's default 110); the catalog (or chart) is served before it too. The clock runs from the
first input's create to the last one done. Sampled every ``--interval`` s: the installer's CPU
seconds and peak RSS (VmHWM; Flux and OLM v0: both controllers, summed), and pivoter's own API
requests (``pivoter_kube_requests_total``).

Usage: python bench/install_peers.py [--factors 10]
       [--variants resolutions,clusterextensions,flux,olmv0]
       [--peer-factor 2] [--concurrent N] [--interval 5] [--setup-timeout 3600] [--keep-logs DIR]
Prints a Markdown table for docs/benchmarks/daemon-scale.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from bench.daemon_scale import Daemon2, _create, _stop, metrics_text  # noqa: E402
from bench.daemon_scale_report import kube_requests  # noqa: E402
from bench.pivot import CATALOGS, NAMESPACES, RESOLUTIONS, Recorder, condition_true  # noqa: E402
from bench.steady_state import cpu_seconds, memory_mib  # noqa: E402
from pivoter.apis.resources import CLUSTER_CATALOGS, CLUSTER_EXTENSIONS  # noqa: E402
from pivoter.daemon.settings import DEFAULT_CONCURRENT  # noqa: E402
from pivoter.kube import Kube, load_client  # noqa: E402
from provisioners.apply.applier import Applier, Owner  # noqa: E402
from provisioners.apply.kubeapi import KubeAPI  # noqa: E402
from provisioners.apply.resources import Resource  # noqa: E402
from tests.cluster import TestCluster  # noqa: E402
from tests.e2e.daemon import free_port  # noqa: E402
from tests.olmv0.peer import CATALOG_SOURCES, CSVS, OLM_NAMESPACE, OPERATOR_GROUPS, OlmV0  # noqa: E402
from tests.olmv1.content import Bundle, Package, bundle_files, push_catalog  # noqa: E402
from tests.provisioners.servers import Registry, run_registry  # noqa: E402
from tests.tools import TOOLS_DIR  # noqa: E402
from tests.wire.conftest import OpmServer  # noqa: E402

PER_FACTOR = 100
NODES = Resource("v1", "Node", "nodes", namespaced=False)
SYSTEM = "pivoter-system"
SCENARIO = "bench"
CHANNEL = "stable"
VERSION = "1.0.0"
CATALOG = "bench"
DEADLINE = 7200
"""``progressDeadlineSeconds`` of the Resolutions (a pivot may wait long in the queue)."""
VARIANTS = ("resolutions", "clusterextensions", "flux", "olmv0")
FLUX_NAMESPACE = "flux-system"
FLUX_CONCURRENT = 10
"""Both Flux controllers' ``--concurrent`` in the Flux benchmark (fluxcd/flux-benchmark)."""
HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
BUNDLE = Bundle(
    VERSION, (CHANNEL,), contents=("Deployment", "ConfigMap"), install_modes=("OwnNamespace",)
)


def package(i: int) -> str:
    """The name of the i-th package, and of the Namespace it is installed into."""
    return f"p{i:04d}"


# ---------------------------------------------------------------------------- content


def olm_fbc(directory: Path, count: int) -> None:
    """OLM v0's catalog: the same packages, each bundle named as its CSV with every manifest
    inline (``olm.bundle.object``), one file per package."""
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = package(i)
        files = bundle_files(SCENARIO, name, BUNDLE)
        manifests = [
            yaml.safe_load(text)
            for path, text in sorted(files.items())
            if path.startswith("manifests/")
        ]
        csv = next(m for m in manifests if m["kind"] == "ClusterServiceVersion")
        bundle = str(csv["metadata"]["name"])
        properties: list[dict[str, Any]] = [
            {"type": "olm.package", "value": {"packageName": name, "version": VERSION}},
            {"type": "olm.bundle.mediatype", "value": "registry+v1"},
        ]
        properties += [
            {
                "type": "olm.bundle.object",
                "value": {
                    "data": base64.b64encode(json.dumps(m, sort_keys=True).encode()).decode()
                },
            }
            for m in manifests
        ]
        docs = [
            {"schema": "olm.package", "name": name, "defaultChannel": CHANNEL},
            {
                "schema": "olm.channel",
                "name": CHANNEL,
                "package": name,
                "entries": [{"name": bundle}],
            },
            {"schema": "olm.bundle", "name": bundle, "package": name, "properties": properties},
        ]
        (directory / f"{name}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))


# ---------------------------------------------------------------------------- measuring


@dataclass
class Result:
    """One variant at one factor."""

    variant: str
    count: int
    done: int = 0
    seconds: float = 0.0
    """From the first create to the last input done (or to the deadline)."""
    first: float = 0.0
    """From the first create to the first input done."""
    half: float = 0.0
    """... to half of them done."""
    cpu: float = 0.0
    """The installer's CPU seconds over :attr:`seconds`."""
    peak: float = 0.0
    """The installer's VmHWM at the end, MiB (OLM v0: its two controllers, summed)."""
    requests: float = 0.0
    """pivoter's own API requests over :attr:`seconds` (not measured for OLM v0)."""
    deadline: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.done >= self.count


def run_clock(  # noqa: PLR0917 - the clock of every variant, one call each
    result: Result,
    pids: Callable[[], list[int]],
    count_done: Callable[[], int],
    create: Callable[[], None],
    timeout: float,
    requests: Callable[[], float] | None = None,
    interval: float = 5.0,
) -> None:
    """Create the inputs and wait until all are done (or ``timeout``), filling ``result``."""
    cpu0 = sum(cpu_seconds(p) for p in pids())
    requests0 = requests() if requests else 0.0
    start = time.monotonic()
    create()
    said = time.monotonic()
    result.notes.append(f"inputs created in {said - start:.1f} s")
    while True:
        done = count_done()
        elapsed = time.monotonic() - start
        if done and not result.first:
            result.first = elapsed
        if done * 2 >= result.count and not result.half:
            result.half = elapsed
        result.done, result.seconds = done, elapsed
        if done >= result.count or elapsed > timeout:
            break
        if time.monotonic() - said >= 30:
            said = time.monotonic()
            rss = sum(memory_mib(p)[0] for p in pids())
            print(
                f"  {result.variant} {elapsed:.0f}s: {done}/{result.count} done, RSS {rss:.0f} MiB",
                file=sys.stderr,
            )
        time.sleep(min(interval, 1.0))
    result.cpu = sum(cpu_seconds(p) for p in pids()) - cpu0
    result.peak = sum(memory_mib(p)[1] for p in pids())
    if requests:
        result.requests = requests() - requests0


# ---------------------------------------------------------------------------- pivoter


@contextlib.contextmanager
def pivoter(
    cluster: TestCluster, work: Path, args: argparse.Namespace, olmv1: bool
) -> Iterator[tuple[Kube, Daemon2]]:
    """pivoter's CRDs (and OLM v1's) on a fresh cluster, and ``pivoter run`` against it."""
    with contextlib.ExitStack() as stack:
        client = load_client(kubeconfig=str(cluster.kubeconfig))
        stack.callback(client.close)
        kube = Kube(client)
        paths = sorted((ROOT / "crds").glob("*.yaml"))
        if olmv1:
            paths += sorted((ROOT / "crds" / "olmv1").glob("*.yaml"))
        crds = [yaml.safe_load(p.read_text()) for p in paths]
        Applier(KubeAPI(client), Owner("Bench", "crds")).apply(crds)
        _wait_established(KubeAPI(client), [c["metadata"]["name"] for c in crds])
        kube.create(
            NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}}
        )
        daemon = Daemon2(
            cluster.kubeconfig,
            namespace=SYSTEM,
            store_dir=work / "store",
            log=work / "daemon.log",
            webhook=False,
            extra_args=["--olmv1=serve"] if olmv1 else [],
        )
        daemon.concurrent = args.concurrent
        stack.callback(daemon.stop)
        daemon.start()
        yield kube, daemon


def _wait_established(api: KubeAPI, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
    for name in names:
        while True:
            conditions = (api.request("GET", path + name).get("status") or {}).get(
                "conditions"
            ) or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} not Established")
            time.sleep(0.2)


def room_for_pods(kube: Kube, count: int) -> None:
    """A second simulated node with room for ``count`` more pods (the cluster's own node takes
    110, the kubelet's default: 1000 Deployments would wait for room)."""
    node = "kwok-bench"
    pods = str(count + 100)
    _create(
        kube,
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": node,
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": node,
                    "kubernetes.io/os": "linux",
                },
            },
            "status": {
                "allocatable": {"cpu": "1000", "memory": "4Ti", "pods": pods},
                "capacity": {"cpu": "1000", "memory": "4Ti", "pods": pods},
            },
        },
    )


def namespaces(kube: Kube, count: int) -> None:
    """One Namespace per package, and room for a pod of each."""
    room_for_pods(kube, count)
    for i in range(count):
        _create(
            kube,
            NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": package(i)}},
        )


def daemon_requests(daemon: Daemon2) -> Callable[[], float]:
    def total() -> float:
        return sum(kube_requests(metrics_text(daemon)).values())

    return total


@dataclass(frozen=True)
class PivoterVariant:
    """What differs between pivoter's two inputs: the catalog object, the input, when done."""

    name: str
    olmv1: bool
    catalog_resource: Resource
    catalog: dict[str, Any]
    serving: Callable[[dict[str, Any]], bool]
    inputs: Resource
    body: Callable[[int], dict[str, Any]]
    done: Callable[[dict[str, Any]], bool]


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


RESOLUTIONS_VARIANT = PivoterVariant(
    name="resolutions",
    olmv1=False,
    catalog_resource=CATALOGS,
    catalog={
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "Catalog",
        "metadata": {"name": CATALOG},
        "spec": {"source": {"type": "image", "image": {"ref": ""}}, "pollInterval": "10m"},
    },
    serving=lambda obj: bool(_status(obj).get("contentDigest")),
    inputs=RESOLUTIONS,
    body=lambda i: {
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "Resolution",
        "metadata": {"name": package(i)},
        "spec": {
            "packages": [{"name": package(i)}],
            "installNamespace": package(i),
            "progressDeadlineSeconds": DEADLINE,
        },
    },
    done=lambda obj: _status(obj).get("activeRevision") == 1 and condition_true(obj, "Ready"),
)
"""N Resolutions against a Catalog of the catalog image."""

CLUSTER_EXTENSIONS_VARIANT = PivoterVariant(
    name="clusterextensions",
    olmv1=True,
    catalog_resource=CLUSTER_CATALOGS,
    catalog={
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": CATALOG},
        "spec": {"source": {"type": "Image", "image": {"ref": ""}}},
    },
    serving=lambda obj: condition_true(obj, "Serving"),
    inputs=CLUSTER_EXTENSIONS,
    body=lambda i: {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": package(i)},
        "spec": {
            "namespace": package(i),
            "source": {"sourceType": "Catalog", "catalog": {"packageName": package(i)}},
        },
    },
    done=lambda obj: condition_true(obj, "Installed"),
)
"""N ClusterExtensions against a ClusterCatalog of the catalog image."""

PIVOTER_VARIANTS = {v.name: v for v in (RESOLUTIONS_VARIANT, CLUSTER_EXTENSIONS_VARIANT)}


def run_pivoter(  # noqa: PLR0917 - one call per variant
    variant: PivoterVariant,
    cluster: TestCluster,
    work: Path,
    args: argparse.Namespace,
    ref: str,
    count: int,
) -> Result:
    """``count`` inputs of ``variant`` against one catalog object of the catalog image ``ref``."""
    result = Result(variant.name, count)
    with pivoter(cluster, work, args, olmv1=variant.olmv1) as (kube, daemon):
        namespaces(kube, count)
        catalogs = Recorder(kube, variant.catalog_resource)
        catalog = copy.deepcopy(variant.catalog)
        catalog["spec"]["source"]["image"]["ref"] = ref
        kube.create(variant.catalog_resource, catalog)
        catalogs.wait(
            lambda objs: variant.serving(objs.get(CATALOG) or {}),
            timeout=300,
            what=f"the {catalog['kind']} serving",
        )
        catalogs.stop()
        inputs = Recorder(kube, variant.inputs)
        try:

            def create() -> None:
                for i in range(count):
                    _create(kube, variant.inputs, variant.body(i))

            def done() -> int:
                with inputs._cond:
                    return sum(1 for o in inputs.latest.values() if variant.done(o))

            run_clock(
                result,
                lambda: [daemon.pid],
                done,
                create,
                args.setup_timeout,
                daemon_requests(daemon),
                args.interval,
            )
        finally:
            inputs.stop()
            _keep(args, work, variant.name)
    return result


# ---------------------------------------------------------------------------- Flux


CHART_OBJECTS = """\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: bundle-manager-bench-{{ .Release.Name }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: bundle-manager-bench-{{ .Release.Name }}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: bundle-manager-bench-{{ .Release.Name }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: bundle-manager-bench-{{ .Release.Name }}
subjects:
  - kind: ServiceAccount
    name: bundle-manager-bench-{{ .Release.Name }}
    namespace: {{ .Release.Namespace }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: test-operator-bench-{{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: test-operator-bench-{{ .Release.Name }}
  template:
    metadata:
      labels:
        app: test-operator-bench-{{ .Release.Name }}
    spec:
      serviceAccountName: bundle-manager-bench-{{ .Release.Name }}
      containers:
        - name: manager
          image: busybox:1.36
          args: [sleep]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: test-configmap-bench-{{ .Release.Name }}
data:
  version: "1.0.0"
"""


def push_chart(registry: Registry, work: Path) -> str:
    """Package the bench chart with ``helm`` and push it to ``charts/bench:1.0.0``; return the
    OCI repository URL."""
    chart = work / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: bench\nversion: 1.0.0\n")
    (chart / "templates" / "objects.yaml").write_text(CHART_OBJECTS)
    helm = str(TOOLS_DIR / "helm")
    env = {
        **os.environ,
        "HELM_CONFIG_HOME": str(work / "helm"),
        "HELM_CACHE_HOME": str(work / "helm"),
    }
    subprocess.run(
        [helm, "package", str(chart), "-d", str(work)], check=True, env=env, capture_output=True
    )
    url = f"oci://{registry.host}/charts"
    subprocess.run(
        [helm, "push", str(work / "bench-1.0.0.tgz"), url, "--plain-http"],
        check=True,
        env=env,
        capture_output=True,
    )
    return f"{url}/bench"


def _flux_controller(
    name: str, work: Path, kubeconfig: Path, *extra: str
) -> subprocess.Popen[bytes]:
    binary = TOOLS_DIR / "flux" / name
    if not binary.is_file():
        raise SystemExit(f"{binary} is missing: hack/tools.sh optional/flux (see the script)")
    metrics, health = free_port(), free_port()
    log = (work / f"{name}.log").open("wb")
    return subprocess.Popen(
        [
            str(binary),
            *("--metrics-addr", f"127.0.0.1:{metrics}", "--health-addr", f"127.0.0.1:{health}"),
            *("--concurrent", str(FLUX_CONCURRENT), "--log-encoding", "console"),
            *extra,
        ],
        env={**os.environ, "KUBECONFIG": str(kubeconfig), "RUNTIME_NAMESPACE": FLUX_NAMESPACE},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _running(processes: list[subprocess.Popen[bytes]], work: Path) -> bool:
    for process in processes:
        if process.poll() is not None:
            raise RuntimeError(f"a Flux controller exited: see its log in {work}")
    return True


def run_flux(
    cluster: TestCluster, work: Path, args: argparse.Namespace, chart_url: str, count: int
) -> Result:
    """N HelmReleases of one OCIRepository, by Flux's source-controller and helm-controller."""
    result = Result("flux", count)
    with contextlib.ExitStack() as stack:
        client = load_client(kubeconfig=str(cluster.kubeconfig))
        stack.callback(client.close)
        kube = Kube(client)
        crds = [
            yaml.safe_load(p.read_text())
            for p in sorted((TOOLS_DIR / "flux" / "crds").glob("*.yaml"))
        ]
        if not crds:
            raise SystemExit("Flux's CRDs are missing: hack/tools.sh optional/flux")
        Applier(KubeAPI(client), Owner("Bench", "flux-crds")).apply(crds)
        _wait_established(KubeAPI(client), [c["metadata"]["name"] for c in crds])
        _create(
            kube,
            NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLUX_NAMESPACE}},
        )
        storage = free_port()
        (work / "storage").mkdir()
        processes = [
            _flux_controller(
                "source-controller",
                work,
                cluster.kubeconfig,
                *("--storage-path", str(work / "storage")),
                *(
                    "--storage-addr",
                    f"127.0.0.1:{storage}",
                    "--storage-adv-addr",
                    f"127.0.0.1:{storage}",
                ),
            ),
            _flux_controller("helm-controller", work, cluster.kubeconfig),
        ]
        for process in processes:
            stack.callback(_stop, process)
        stack.callback(_keep, args, work, "flux")
        oci = kube.resource("source.toolkit.fluxcd.io/v1", "OCIRepository")
        releases_resource = kube.resource("helm.toolkit.fluxcd.io/v2", "HelmRelease")
        repositories = Recorder(kube, oci, FLUX_NAMESPACE)
        kube.create(
            oci,
            {
                "apiVersion": "source.toolkit.fluxcd.io/v1",
                "kind": "OCIRepository",
                "metadata": {"name": CATALOG, "namespace": FLUX_NAMESPACE},
                "spec": {
                    "interval": "10m",
                    "url": chart_url,
                    "ref": {"tag": VERSION},
                    "insecure": True,
                    "layerSelector": {"mediaType": HELM_LAYER, "operation": "copy"},
                },
            },
            FLUX_NAMESPACE,
        )
        repositories.wait(
            lambda objs: (
                _running(processes, work) and condition_true(objs.get(CATALOG) or {}, "Ready")
            ),
            timeout=300,
            what="the OCIRepository Ready",
        )
        repositories.stop()
        namespaces(kube, count)
        releases = Recorder(kube, releases_resource)
        stack.callback(releases.stop)

        def create() -> None:
            for i in range(count):
                kube.create(
                    releases_resource,
                    {
                        "apiVersion": "helm.toolkit.fluxcd.io/v2",
                        "kind": "HelmRelease",
                        "metadata": {"name": package(i), "namespace": package(i)},
                        "spec": {
                            "interval": "10m",
                            "chartRef": {
                                "kind": "OCIRepository",
                                "name": CATALOG,
                                "namespace": FLUX_NAMESPACE,
                            },
                        },
                    },
                    package(i),
                )

        def done() -> int:
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"a Flux controller exited ({process.returncode}); see {work}"
                    )
            with releases._cond:
                return sum(1 for o in releases.latest.values() if condition_true(o, "Ready"))

        run_clock(
            result,
            lambda: [p.pid for p in processes],
            done,
            create,
            args.setup_timeout,
            None,
            args.interval,
        )
    return result


# ---------------------------------------------------------------------------- OLM v0


def run_olm_v0(
    cluster: TestCluster, work: Path, args: argparse.Namespace, count: int, timeout: float
) -> Result:
    """N Subscriptions, each in its Namespace with an OperatorGroup, from a grpc CatalogSource."""
    result = Result("olmv0", count, deadline=timeout)
    with contextlib.ExitStack() as stack:
        client = load_client(kubeconfig=str(cluster.kubeconfig))
        stack.callback(client.close)
        kube = Kube(client)
        olm_work = work / "olm"
        olm_work.mkdir()
        peer = OlmV0(cluster.kubeconfig, KubeAPI(client), kube, olm_work)
        peer.install_crds()
        directory = work / "olm-fbc"
        olm_fbc(directory, count)
        server = OpmServer(directory, work)
        stack.callback(server.close)
        peer.start()
        stack.callback(peer.stop)
        stack.callback(_keep_olm, args, olm_work)
        sources = Recorder(kube, CATALOG_SOURCES, OLM_NAMESPACE)
        peer.catalog_source(OLM_NAMESPACE, server.target, name=CATALOG)
        sources.wait(
            lambda objs: (
                (((objs.get(CATALOG) or {}).get("status") or {}).get("connectionState") or {}).get(
                    "lastObservedState"
                )
                == "READY"
            ),
            timeout=300,
            what="the CatalogSource READY",
        )
        sources.stop()
        namespaces(kube, count)
        groups = Recorder(kube, OPERATOR_GROUPS)
        for i in range(count):
            peer.operator_group(package(i), [package(i)], name=package(i))
        groups.wait(
            lambda objs: (
                sum(1 for o in objs.values() if (o.get("status") or {}).get("namespaces")) >= count
            ),
            timeout=1800,
            what="OLM v0 to sync every OperatorGroup",
        )
        groups.stop()
        csvs = Recorder(kube, CSVS)
        stack.callback(csvs.stop)
        pids = [p.pid for p in peer.processes.values()]

        def create() -> None:
            for i in range(count):
                peer.subscription(
                    package(i), package(i), CHANNEL, CATALOG, sourceNamespace=OLM_NAMESPACE
                )

        def done() -> int:
            peer.check_running()
            with csvs._cond:
                return sum(
                    1
                    for o in csvs.latest.values()
                    if (o.get("status") or {}).get("phase") == "Succeeded"
                    and not ((o["metadata"].get("labels") or {}).get("olm.copiedFrom"))
                )

        run_clock(result, lambda: pids, done, create, timeout, None, args.interval)
    return result


def _keep(args: argparse.Namespace, work: Path, name: str) -> None:
    if args.keep_logs:
        target = args.keep_logs / name
        target.mkdir(parents=True, exist_ok=True)
        for log in work.glob("*.log"):
            shutil.copy(log, target / log.name)


def _keep_olm(args: argparse.Namespace, olm_work: Path) -> None:
    _keep(args, olm_work, "olmv0")


# ---------------------------------------------------------------------------- the run


def factor_run(factor: int, args: argparse.Namespace) -> list[Result]:
    """Every variant of one factor, each on its own control plane."""
    count = PER_FACTOR * factor
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix=f"install-peers-{factor}x-") as tmp:
        work = Path(tmp)
        with run_registry(work / "registry") as registry:
            started = time.monotonic()
            ref = _push(registry, count)
            chart = push_chart(registry, work) if "flux" in args.variants else ""
            print(
                f"{factor}x: {count} bundles and the catalog pushed "
                f"in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
            )
            for variant in args.variants:
                vwork = work / variant
                vwork.mkdir()
                cluster = TestCluster.start(watch_cache=True)
                try:
                    print(f"{factor}x {variant}: started", file=sys.stderr)
                    if variant in PIVOTER_VARIANTS:
                        pv = PIVOTER_VARIANTS[variant]
                        results.append(run_pivoter(pv, cluster, vwork, args, ref, count))
                    elif variant == "flux":
                        results.append(run_flux(cluster, vwork, args, chart, count))
                    else:
                        mine = [r.seconds for r in results if r.variant in PIVOTER_VARIANTS]
                        timeout = args.peer_factor * max(mine) if mine else args.setup_timeout
                        results.append(run_olm_v0(cluster, vwork, args, count, timeout))
                    print(f"{factor}x {variant}: {results[-1]}", file=sys.stderr)
                finally:
                    cluster.stop()
    return results


def _push(registry: Registry, count: int) -> str:
    packages = [Package(package(i), [BUNDLE]) for i in range(count)]
    return push_catalog(registry, SCENARIO, CATALOG, "v1", packages)


def table(results: Sequence[Result]) -> list[str]:
    """The Markdown table of one factor."""
    lines = [
        "| installer, inputs | done | first / half / all done, s | CPU s | peak RSS MiB "
        "| API requests (req/s) |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        name = {
            "resolutions": "pivoter, Resolutions",
            "clusterextensions": "pivoter, ClusterExtensions",
            "flux": "Flux (source-controller + helm-controller), HelmReleases",
            "olmv0": "OLM v0 (olm + catalog operators), Subscriptions",
        }[r.variant]
        done = f"{r.done}/{r.count}" + (
            "" if r.finished else f" at the deadline ({r.deadline:.0f} s)"
        )
        half = f"{r.half:.1f}" if r.half else "n/a"
        first = f"{r.first:.1f}" if r.first else "n/a"
        whole = f"{r.seconds:.1f}" if r.finished else f"> {r.seconds:.0f}"
        requests = (
            f"{r.requests:.0f} ({r.requests / r.seconds:.1f})" if r.requests else "not measured"
        )
        lines.append(
            f"| {name} | {done} | {first} / {half} / {whole} | {r.cpu:.1f} | {r.peak:.0f} "
            f"| {requests} |"
        )
    return lines


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--factors", default="10", help="comma-separated (default 10)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, in order")
    parser.add_argument(
        "--peer-factor",
        type=float,
        default=2.0,
        help="OLM v0's deadline, times pivoter's slower time",
    )
    parser.add_argument("--concurrent", type=int, default=DEFAULT_CONCURRENT)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--setup-timeout", type=float, default=3600.0)
    parser.add_argument("--keep-logs", type=Path)
    args = parser.parse_args(argv)
    args.factors = [int(f) for f in str(args.factors).split(",") if f.strip()]
    args.variants = [v.strip() for v in str(args.variants).split(",") if v.strip()]
    unknown = set(args.variants) - set(VARIANTS)
    if unknown or not args.variants:
        parser.error(
            f"--variants: choose from {', '.join(VARIANTS)} (got {sorted(unknown) or 'none'})"
        )
    if not args.factors or min(args.factors) < 1:
        parser.error("every factor is at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(
        f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores; "
        f"commit {commit or 'unknown'}"
    )
    for factor in args.factors:
        results = factor_run(factor, args)
        print(f"\n### {factor}x: {PER_FACTOR * factor} packages\n")
        print("\n".join(table(results)))
        for r in results:
            for note in r.notes:
                print(f"- {r.variant}: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
