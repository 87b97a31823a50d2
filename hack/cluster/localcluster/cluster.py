"""A local Kubernetes control plane on loopback: start, attach, stop, and test hooks.

The one place that runs the control-plane processes. ``hack/cluster-up.sh`` and
``hack/cluster-down.sh`` (through ``python -m localcluster``), the pytest fixtures in
``tests/cluster.py`` and the demo all use :class:`LocalCluster`. A cluster lives in one root
directory (certificates, kubeconfigs, etcd data, logs, ``state.json``) outside the repository;
stopping it removes that directory.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import pki
from .ports import free_ports
from .processes import (
    ClusterError,
    Component,
    check_port_free,
    pid_alive,
    pid_cmdline,
    terminate_pid,
)

STATE_FILE = "state.json"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_NAME = "kwok-node-0"
# The controllers the tests rely on; everything else in kube-controller-manager stays off so the
# control plane starts fast and uses little CPU on a shared machine.
CONTROLLERS = (
    "garbage-collector-controller",
    "namespace-controller",
    "deployment-controller",
    "replicaset-controller",
    # Helm hook Jobs run to completion (kwok completes the pods of Jobs).
    "job-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    # Removes the node.kubernetes.io/not-ready taint once kwok reports the node Ready.
    "node-lifecycle-controller",
    # Services route to pods (and webhook/aggregated-API Services to their backends).
    "endpoints-controller",
    "endpointslice-controller",
)
# Components in start order; they are stopped in reverse.
ORDER = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def default_binary() -> Path:
    """Where ``hack/tools/kube.sh`` installs the multi-call control-plane binary."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pivoter"
    tools = Path(
        os.environ.get("PIVOTER_TOOLS_DIR", Path(os.environ.get("PIVOTER_CACHE", cache)) / "bin")
    )
    return tools / "kube"


@dataclass
class ClusterConfig:
    """How to run the control plane; the defaults suit the test suite."""

    binary: Path = field(default_factory=default_binary)
    # Simulated nodes (kwok) so that Pods are scheduled and become Running.
    kwok: bool = True
    # Fixed apiserver port (0: pick a free one).
    apiserver_port: int = 0
    # How often kube-apiserver itself compacts etcd (its --etcd-compaction-interval).
    etcd_compaction_interval: str = "5m"
    # The apiserver watch cache serves watches from memory and ignores etcd compaction, so a
    # watch from a compacted resourceVersion only gets 410 Gone with the cache off (the default
    # here; see docs/control-plane.md).
    watch_cache: bool = False
    # SIGTERM the components when the process that started them dies (pytest); off for
    # hack/cluster-up.sh, whose cluster outlives the script.
    die_with_parent: bool = False
    start_timeout: float = 120.0
    # Extra flags per component name, appended last (tests use this to provoke failures).
    extra_args: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class _Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int


class LocalCluster:
    """A control plane rooted in one directory; create with :meth:`start` or :meth:`attach`."""

    def __init__(self, root: Path, config: ClusterConfig, ports: _Ports) -> None:
        self.root = root
        self.config = config
        self.ports = ports
        self.components: dict[str, Component] = {}
        self.owner_pid = os.getpid()

    # ----------------------------------------------------------------------------------- paths

    @property
    def kubeconfig(self) -> Path:
        """Admin kubeconfig (group system:masters)."""
        return self.root / "admin.kubeconfig"

    @property
    def server(self) -> str:
        """The apiserver URL."""
        return f"https://127.0.0.1:{self.ports.apiserver}"

    @property
    def etcd_url(self) -> str:
        """The etcd client URL (plain HTTP on loopback; also etcd's JSON gateway)."""
        return f"http://127.0.0.1:{self.ports.etcd_client}"

    @property
    def pki_dir(self) -> Path:
        """Directory holding the CA, certificates and keys."""
        return self.root / "pki"

    @property
    def logs_dir(self) -> Path:
        """Directory holding one log file per component."""
        return self.root / "logs"

    # --------------------------------------------------------------------------- life cycle

    @classmethod
    def start(cls, root: Path, config: ClusterConfig | None = None) -> LocalCluster:
        """Create a fresh cluster in ``root`` and wait until it serves; stop it again on failure."""
        config = config or ClusterConfig()
        if not (config.binary.is_file() and os.access(config.binary, os.X_OK)):
            raise ClusterError(
                f"control-plane binary {config.binary} is missing; run: hack/tools.sh kube"
            )
        clear_stale(root)
        if config.apiserver_port:
            check_port_free(config.apiserver_port, "kube-apiserver")
        picked = free_ports(5, taken=[config.apiserver_port] if config.apiserver_port else [])
        ports = _Ports(
            etcd_client=picked[0],
            etcd_peer=picked[1],
            apiserver=config.apiserver_port or picked[2],
            controller_manager=picked[3],
            scheduler=picked[4],
        )
        root.mkdir(parents=True, exist_ok=True)
        cluster = cls(root, config, ports)
        try:
            cluster._write_pki()
            for name in ORDER:
                if name == "kwok" and not config.kwok:
                    continue
                cluster._start_component(name)
            cluster._save_state()
        except BaseException:
            # Also on KeyboardInterrupt: never leave half a control plane running.
            cluster.stop(remove=False)
            raise
        return cluster

    @classmethod
    def attach(cls, root: Path) -> LocalCluster:
        """Take over a running cluster from its ``state.json`` (written by :meth:`start`)."""
        try:
            state = json.loads((root / STATE_FILE).read_text())
        except FileNotFoundError as exc:
            raise ClusterError(f"no cluster state in {root} (is a cluster running?)") from exc
        config_data = dict(state["config"])
        config_data["binary"] = Path(config_data["binary"])
        cluster = cls(root, ClusterConfig(**config_data), _Ports(**state["ports"]))
        cluster.owner_pid = state["owner_pid"]
        for name, entry in state["components"].items():
            component = Component(name, entry["argv"], Path(entry["log"]), pid=entry["pid"])
            cluster.components[name] = component
        return cluster

    def stop(self, *, remove: bool = True) -> None:
        """Stop every component (reverse start order) and, if ``remove``, delete the root."""
        for name in reversed(ORDER):
            component = self.components.get(name)
            if component is not None:
                component.stop()
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def alive(self) -> dict[str, bool]:
        """Which components are running."""
        return {name: c.exited() is None for name, c in self.components.items()}

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd and the controllers keep running)."""
        self.components["kube-apiserver"].stop()
        self._save_state()

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port, with the same data; wait until ready."""
        component = self.components["kube-apiserver"]
        component.start(die_with_parent=self.config.die_with_parent)
        self._save_state()
        component.wait_until(self._apiserver_ready, self.config.start_timeout, "ready (/readyz)")

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver; clients see connection errors in between."""
        self.stop_apiserver()
        self.start_apiserver()

    # ------------------------------------------------------------------------------- helpers

    def user_kubeconfig(self, user: str, groups: list[str] | tuple[str, ...] = ()) -> Path:
        """A kubeconfig for ``user`` in ``groups`` (client certificate: CN=user, O=groups)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", user)
        suffix = "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", g) for g in groups)
        name = f"user-{safe}" + (f"--{suffix}" if suffix else "")
        directory = self.root / "users"
        directory.mkdir(exist_ok=True)
        ca = pki.KeyPair(self.pki_dir / "ca.crt", self.pki_dir / "ca.key")
        client = pki.issue(ca, directory, name, user, organizations=list(groups))
        return pki.write_kubeconfig(
            directory / f"{name}.kubeconfig",
            server=self.server,
            ca=ca.cert,
            client=client,
            user=user,
        )

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision and return that revision.

        Afterwards a watch from any older resourceVersion fails with 410 Gone (with the watch
        cache off, which is the default).
        """
        header = self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"/").decode()})
        revision = int(header["header"]["revision"])
        self._etcd_call("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def api(self, method: str, path: str, body: Any = None, *, timeout: float = 10.0) -> Any:
        """Call the apiserver as admin with plain JSON (no client library needed)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, context=self._admin_tls(), timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")

    # ------------------------------------------------------------------------------ internals

    def _etcd_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.etcd_url + path, data=json.dumps(body).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as resp:
            result: dict[str, Any] = json.loads(resp.read())
        return result

    def _admin_tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
        context.load_cert_chain(self.pki_dir / "admin.crt", self.pki_dir / "admin.key")
        return context

    def _write_pki(self) -> None:
        d = self.pki_dir
        d.mkdir(parents=True, exist_ok=True)
        ca = pki.create_ca(d, "ca", "pivoter-local-ca")
        front_proxy_ca = pki.create_ca(d, "front-proxy-ca", "pivoter-front-proxy-ca")
        pki.issue(
            ca,
            d,
            "apiserver",
            "kube-apiserver",
            dns_names=[
                "localhost",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
            ],
            ip_addresses=["127.0.0.1", "10.0.0.1"],
            server=True,
        )
        pki.issue(front_proxy_ca, d, "front-proxy-client", "front-proxy-client")
        pki.create_service_account_key(d)
        identities = {
            "admin": ("pivoter-admin", ["system:masters"]),
            "controller-manager": ("system:kube-controller-manager", []),
            "scheduler": ("system:kube-scheduler", []),
            # kwok stands in for kubelets on every node; it needs to write any Node and Pod status.
            "kwok": ("kwok-controller", ["system:masters"]),
        }
        for name, (cn, groups) in identities.items():
            client = pki.issue(ca, d, name, cn, organizations=groups)
            pki.write_kubeconfig(
                self.root / f"{name}.kubeconfig",
                server=self.server,
                ca=ca.cert,
                client=client,
                user=cn,
            )

    def _argv(self, name: str) -> list[str]:
        d, root, p = self.pki_dir, self.root, self.ports
        binary = str(self.config.binary)
        if name == "etcd":
            argv = [
                binary,
                "etcd",
                f"--data-dir={root / 'etcd'}",
                f"--listen-client-url=http://127.0.0.1:{p.etcd_client}",
                f"--listen-peer-url=http://127.0.0.1:{p.etcd_peer}",
            ]
        elif name == "kube-apiserver":
            argv = [
                binary,
                "kube-apiserver",
                f"--etcd-servers=http://127.0.0.1:{p.etcd_client}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p.apiserver}",
                f"--cert-dir={root / 'apiserver-certs'}",
                f"--tls-cert-file={d / 'apiserver.crt'}",
                f"--tls-private-key-file={d / 'apiserver.key'}",
                f"--client-ca-file={d / 'ca.crt'}",
                "--authorization-mode=Node,RBAC",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={d / 'sa.pub'}",
                f"--service-account-signing-key-file={d / 'sa.key'}",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                # No kube-proxy here: aggregated APIs are reached at their endpoint addresses.
                "--enable-aggregator-routing=true",
                f"--requestheader-client-ca-file={d / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={d / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={d / 'front-proxy-client.key'}",
                # Loopback cannot be an Endpoints address, so the lease reconciler would only log
                # errors; nothing in-cluster needs to reach the apiserver through its Service.
                "--endpoint-reconciler-type=none",
                f"--etcd-compaction-interval={self.config.etcd_compaction_interval}",
                f"--watch-cache={'true' if self.config.watch_cache else 'false'}",
                "--allow-privileged=true",
                "--profiling=false",
            ]
        elif name == "kube-controller-manager":
            kubeconfig = root / "controller-manager.kubeconfig"
            argv = [
                binary,
                "kube-controller-manager",
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p.controller_manager}",
                f"--cert-dir={root / 'controller-manager-certs'}",
                f"--controllers={','.join(CONTROLLERS)}",
                # Each controller acts as its own service account, as in kubeadm clusters, so
                # the bootstrap RBAC roles apply.
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={d / 'sa.key'}",
                f"--root-ca-file={d / 'ca.crt'}",
                "--leader-elect=false",
            ]
        elif name == "kube-scheduler":
            kubeconfig = root / "scheduler.kubeconfig"
            argv = [
                binary,
                "kube-scheduler",
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p.scheduler}",
                f"--cert-dir={root / 'scheduler-certs'}",
                "--leader-elect=false",
            ]
        elif name == "kwok":
            argv = [
                binary,
                "kwok",
                f"--kubeconfig={root / 'kwok.kubeconfig'}",
                "--manage-all-nodes=true",
                "--cidr=10.244.0.0/16",
                "--node-ip=127.0.0.1",
            ]
        else:
            raise ValueError(f"unknown component {name}")
        return argv + list(self.config.extra_args.get(name, []))

    def _start_component(self, name: str) -> None:
        component = Component(name, self._argv(name), self.logs_dir / f"{name}.log")
        self.components[name] = component
        component.start(die_with_parent=self.config.die_with_parent)
        # Saved after every start so that cluster-down (or the next run) finds every process
        # even if this start is interrupted.
        self._save_state()
        timeout = self.config.start_timeout
        if name == "etcd":
            component.wait_until(self._etcd_healthy, timeout, "healthy (/health)")
        elif name == "kube-apiserver":
            component.wait_until(self._apiserver_ready, timeout, "ready (/readyz)")
        elif name == "kube-controller-manager":
            component.wait_until(
                lambda: self._healthz(self.ports.controller_manager), timeout, "healthy"
            )
            # The serviceaccount controller creating "default" proves the controllers run; Pods
            # cannot be admitted before it exists.
            component.wait_until(
                lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/default"),
                timeout,
                "running its controllers (no default ServiceAccount)",
            )
        elif name == "kube-scheduler":
            component.wait_until(lambda: self._healthz(self.ports.scheduler), timeout, "healthy")
        elif name == "kwok":
            self._create_kwok_node()
            component.wait_until(self._kwok_node_ready, timeout, f"managing node {KWOK_NODE_NAME}")

    def _etcd_healthy(self) -> bool:
        with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as resp:
            return bool(json.loads(resp.read()).get("health") == "true")

    def _apiserver_ready(self) -> bool:
        request = urllib.request.Request(self.server + "/readyz")
        try:
            with urllib.request.urlopen(request, context=self._admin_tls(), timeout=2) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError:
            return False

    def _healthz(self, port: int) -> bool:
        # The components serve a self-signed certificate they made at start; this only asks
        # whether they are alive.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{port}/healthz"
        try:
            with urllib.request.urlopen(url, context=context, timeout=2) as resp:
                return bool(resp.status == 200)
        except urllib.error.HTTPError:
            return False

    def _exists(self, path: str) -> bool:
        try:
            self.api("GET", path, timeout=2)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return False
            raise
        return True

    def _create_kwok_node(self) -> None:
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": KWOK_NODE_NAME,
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                "labels": {
                    "type": "kwok",
                    "kubernetes.io/hostname": KWOK_NODE_NAME,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                },
            },
            # Node status may be set on create; kwok keeps the conditions up to date afterwards.
            "status": {
                "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
                "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            },
        }
        with contextlib.suppress(urllib.error.HTTPError):
            self.api("POST", "/api/v1/nodes", node)

    def _kwok_node_ready(self) -> bool:
        node = self.api("GET", f"/api/v1/nodes/{KWOK_NODE_NAME}", timeout=2)
        conditions = node.get("status", {}).get("conditions") or []
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _save_state(self) -> None:
        config = asdict(self.config)
        config["binary"] = str(self.config.binary)
        state = {
            "owner_pid": self.owner_pid,
            "kubeconfig": str(self.kubeconfig),
            "server": self.server,
            "etcd_url": self.etcd_url,
            "ports": asdict(self.ports),
            "config": config,
            "components": {
                name: {"pid": c.pid, "argv": list(c.argv), "log": str(c.log)}
                for name, c in self.components.items()
            },
        }
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.root / STATE_FILE)


def _ours(pid: int, root: Path) -> bool:
    # A recorded pid may have been reused by an unrelated process after a reboot or a long
    # time; only processes whose command line names this cluster's root are ours to kill.
    return pid_alive(pid) and any(str(root) in arg for arg in pid_cmdline(pid))


def running_components(root: Path) -> dict[str, int]:
    """The recorded components of the cluster in ``root`` that are still running."""
    try:
        state = json.loads((root / STATE_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    alive = {}
    for name, entry in state.get("components", {}).items():
        pid = entry.get("pid")
        if pid and _ours(pid, root):
            alive[name] = pid
    return alive


def clear_stale(root: Path) -> None:
    """Prepare ``root`` for a new cluster: refuse if one runs there, remove a dead one's data."""
    if not root.exists():
        return
    running = running_components(root)
    if running:
        raise ClusterError(
            f"a cluster is already running in {root} (processes {running}); "
            "run hack/cluster-down.sh (or stop it) first"
        )
    # Left behind by a run that was killed before it could clean up.
    shutil.rmtree(root)


def destroy(root: Path, timeout: float = 15.0) -> list[str]:
    """Stop whatever still runs of the cluster in ``root`` and delete the directory."""
    running = running_components(root)
    for name in reversed(ORDER):
        if name in running:
            terminate_pid(running[name], timeout)
    shutil.rmtree(root, ignore_errors=True)
    return list(running)


def sweep_orphans(parent: Path) -> list[Path]:
    """Destroy clusters under ``parent`` whose owning process has died (killed test runs)."""
    removed = []
    if not parent.is_dir():
        return removed
    for root in sorted(parent.iterdir()):
        state_file = root / STATE_FILE
        try:
            state = json.loads(state_file.read_text())
            owner = state["owner_pid"]
            detached = not state["config"]["die_with_parent"]
        except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, KeyError):
            # A directory without state is either being created right now or an aborted
            # start; only remove it once it is clearly old.
            with contextlib.suppress(FileNotFoundError):
                if root.is_dir() and time.time() - root.stat().st_mtime > 3600:
                    shutil.rmtree(root, ignore_errors=True)
                    removed.append(root)
            continue
        # A detached cluster (hack/cluster-up.sh) is meant to outlive the process that made it.
        if not detached and not pid_alive(owner):
            destroy(root)
            removed.append(root)
    return removed
