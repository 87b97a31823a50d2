"""A real Kubernetes node on this machine, for the tests of pivoter's image as real pods.

:func:`real_node` runs Debian's containerd (with runc) and a kubelet built from the Kubernetes Go
modules (``hack/image/kubelet.sh``), joined to a control plane started by the tests, with a bridge
CNI network of its own (``pvtr0``, 10.244.77.0/24, nothing leaves the machine) and a pod sandbox
image pulled from the test registry (``hack/image/pause.sh``). Everything it starts and changes is
undone on exit: containers, shims, containerd, kubelet, mounts, the bridge, the iptables rules.

Two things of this machine are worked around, both in the node only (docs/image.md, "A real
node"):

- Processes here lack CAP_SYS_RESOURCE, and the kubelet gives every pod sandbox an
  ``oom_score_adj`` of -998, which runc cannot set ("can't get final child's PID from pipe: EOF").
  containerd runs runc through ``hack/image/runc-oom.sh``, which raises a negative
  ``oomScoreAdj`` to 0.
- The control plane listens on 127.0.0.1 only, and there is no kube-proxy. Pods reach the API
  server at the bridge's gateway, where an iptables DNAT rule (``route_localnet`` on the bridge)
  forwards to 127.0.0.1; :func:`api_access_patch` gives a pod the address and a host alias that
  matches the API server's certificate (``kubernetes.default.svc``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pivoter.kube import Kube, Resource
from tests.cluster import TestCluster, wait_for
from tests.e2e.daemon import free_ports
from tests.image.images import REPO

BRIDGE = "pvtr0"
SUBNET = "10.244.77.0/24"
GATEWAY = "10.244.77.1"
API_HOST = "kubernetes.default.svc"  # a name in the API server's certificate
API_SERVICE_IP = "10.0.0.1"  # the `kubernetes` Service's address, also in the certificate
NODES = Resource("v1", "Node", "nodes", namespaced=False)


@dataclass(frozen=True)
class RealNode:
    """A running node: its name and how its pods reach the API server."""

    name: str
    api_port: int
    workdir: Path


def _script(name: str) -> str:
    result = subprocess.run(
        [str(REPO / "hack" / "image" / name)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"hack/image/{name} failed: {result.stderr[-3000:]}")
    return result.stdout.strip().splitlines()[-1]


def _containerd_config(workdir: Path, registry: str, pause: str) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{workdir}/containerd/root"
state = "{workdir}/containerd/state"
[grpc]
  address = "{workdir}/containerd.sock"
[{cri}]
  sandbox_image = "{pause}"
  [{cri}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
  [{cri}.containerd.runtimes.runc.options]
    SystemdCgroup = false
    BinaryName = "{REPO / "hack" / "image" / "runc-oom.sh"}"
    Root = "{workdir}/runc"
  [{cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{workdir}/cni"
  [{cri}.registry.mirrors."{registry}"]
    endpoint = ["http://{registry}"]
"""


def _cni_config(workdir: Path) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": "pivoter-node",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(workdir / "ipam"),
                    "ranges": [[{"subnet": SUBNET, "gateway": GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
            {"type": "loopback"},
        ],
    }


def _kubelet_config(workdir: Path) -> dict[str, Any]:
    kubelet_port, healthz_port = free_ports(2)
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,  # this machine mounts cgroup v1 (hybrid)
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{workdir}/containerd.sock",
        "address": "127.0.0.1",
        "port": kubelet_port,
        "healthzPort": healthz_port,
        "readOnlyPort": 0,
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},  # the kubelet's API is on loopback only
        "protectKernelDefaults": False,
        "enforceNodeAllocatable": [],
        "localStorageCapacityIsolation": False,
        "podLogsDir": str(workdir / "pods"),
        "rotateCertificates": False,
    }


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


def _network(api_port: int, forwards: tuple[int, ...]) -> list[list[str]]:
    """Create the bridge and the DNAT rules; return the commands that undo them. A bridge left by
    a killed run is removed first (its name is this module's own). Pods reach the API server at
    the gateway and at the ``kubernetes`` Service's address (what kube-proxy would route, so the
    default in-cluster configuration works unpatched), and each of ``forwards`` (ports of this
    machine's loopback, e.g. a registry) at the gateway."""
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, check=False)
    _run("ip", "link", "add", BRIDGE, "type", "bridge")
    _run("ip", "addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
    _run("ip", "link", "set", BRIDGE, "up")
    Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet").write_text("1")
    targets = [(GATEWAY, api_port, api_port), (API_SERVICE_IP, 443, api_port)]
    targets += [(GATEWAY, port, port) for port in forwards]
    undo = []
    for address, port, to_port in targets:
        rule = ["PREROUTING", "-i", BRIDGE, "-d", address, "-p", "tcp", "--dport", str(port)]
        rule += ["-j", "DNAT", "--to-destination", f"127.0.0.1:{to_port}"]
        _run("iptables", "-t", "nat", "-A", *rule)
        undo.append(["iptables", "-t", "nat", "-D", *rule])
    return [*undo, ["ip", "link", "del", BRIDGE]]


def _processes_with(text: str) -> list[int]:
    """Process ids whose command line contains ``text`` (this node's own shims)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode():
                    found.append(int(entry.name))
    return found


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


NETNS = Path("/var/run/netns")


def _pod_namespaces() -> set[str]:
    """The network namespaces containerd's CRI made for pods (``cni-<uuid>``)."""
    return (
        {p.name for p in NETNS.iterdir() if p.name.startswith("cni-")} if NETNS.is_dir() else set()
    )


def _teardown(workdir: Path, containerd: subprocess.Popen[bytes] | None) -> None:
    runc_root = workdir / "runc" / "k8s.io"
    if runc_root.is_dir():
        ids = subprocess.run(
            ["runc", "--root", str(runc_root), "list", "-q"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        for container in ids:
            subprocess.run(
                ["runc", "--root", str(runc_root), "delete", "--force", container],
                capture_output=True,
                check=False,
            )
    _stop(containerd)
    for pid in _processes_with(f"-address {workdir}/containerd.sock"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(str(workdir))), reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


@contextlib.contextmanager
def real_node(
    cluster: TestCluster,
    kube: Kube,
    registry: str,
    workdir: Path,
    *,
    name: str = "real-node",
    forwards: tuple[int, ...] = (),
) -> Iterator[RealNode]:
    """Start a real node joined to ``cluster``, pulling from the plain-http ``registry``; its pods
    reach each port of ``forwards`` on this machine's loopback at :data:`GATEWAY`."""
    kubelet = _script("kubelet.sh")
    pause = _script("pause.sh")
    subprocess.run(
        [
            str(REPO / "hack" / "image" / "podman.sh"),
            "push",
            "--quiet",
            "--tls-verify=false",
            pause,
            f"{registry}/pivoter-pause:1",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    api_port = int(urlsplit(cluster.api_client().configuration.host).port or 443)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "cni").mkdir()
    (workdir / "cni" / "10-pivoter.conflist").write_text(json.dumps(_cni_config(workdir)))
    (workdir / "containerd.toml").write_text(
        _containerd_config(workdir, registry, f"{registry}/pivoter-pause:1")
    )
    (workdir / "kubelet.yaml").write_text(yaml.safe_dump(_kubelet_config(workdir)))
    kubeconfig = cluster.user_kubeconfig(f"system:node:{name}", ["system:nodes"])
    undo: list[list[str]] = []
    containerd = kubelet_process = None
    namespaces_before = _pod_namespaces()
    try:
        undo = _network(api_port, forwards)
        with (workdir / "containerd.log").open("wb") as log:
            containerd = subprocess.Popen(
                ["containerd", "--config", str(workdir / "containerd.toml")],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for((workdir / "containerd.sock").exists, timeout=30, what="containerd's socket")
        with (workdir / "kubelet.log").open("wb") as log:
            argv = [kubelet, "--config", str(workdir / "kubelet.yaml")]
            argv += ["--kubeconfig", str(kubeconfig), "--hostname-override", name]
            argv += ["--root-dir", str(workdir / "kubelet"), "--cert-dir", str(workdir / "pki")]
            kubelet_process = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

        def ready() -> bool:
            if kubelet_process is not None and kubelet_process.poll() is not None:
                log = (workdir / "kubelet.log").read_text(errors="replace")
                raise RuntimeError(f"the kubelet exited: {log[-3000:]}")
            with contextlib.suppress(Exception):
                conditions = kube.get(NODES, name)["status"].get("conditions") or []
                return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            return False

        try:
            wait_for(ready, timeout=120, what=f"node {name} to be Ready")
        except AssertionError as exc:
            with contextlib.suppress(Exception):
                exc.add_note(f"node status: {kube.get(NODES, name).get('status')}")
            raise
        yield RealNode(name=name, api_port=api_port, workdir=workdir)
    finally:
        _stop(kubelet_process)
        _teardown(workdir, containerd)
        for namespace in sorted(_pod_namespaces() - namespaces_before):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
        for command in reversed(undo):
            subprocess.run(command, capture_output=True, check=False)
        with contextlib.suppress(Exception):
            kube.delete(NODES, name)


def api_access_patch(kind: str, name: str, node: RealNode) -> dict[str, Any]:
    """A kustomize patch that sends ``kind``/``name``'s pods to ``node`` and points them at the
    API server through the bridge (what kube-proxy and a routable API server would do)."""
    env = [
        {"name": "KUBERNETES_SERVICE_HOST", "value": API_HOST},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(node.api_port)},
    ]
    operations = [
        {
            "op": "add",
            "path": "/spec/template/spec/hostAliases",
            "value": [{"ip": GATEWAY, "hostnames": [API_HOST]}],
        },
        {"op": "add", "path": "/spec/template/spec/containers/0/env", "value": env},
        {
            "op": "add",
            "path": "/spec/template/spec/nodeSelector",
            "value": {"kubernetes.io/hostname": node.name},
        },
    ]
    return {"target": {"kind": kind, "name": name}, "patch": yaml.safe_dump(operations)}
