"""A network namespace joined to the host by a veth pair, for servers the API server must reach
through a Service.

Endpoints (EndpointSlices) may not name loopback addresses, and the test control plane runs on
loopback; so a test that registers something behind a Service (an admission webhook, an
aggregated API) runs that server in a namespace of its own, on the namespace side of a veth pair
(``10.203.X.2/30``; the host side is ``10.203.X.1/30``, X chosen at random and free), and names
that address in an EndpointSlice (:func:`endpoint_slice`). :func:`network_namespace` creates the
namespace and always removes it, processes included, also on failure. A process in the namespace
that needs the API server (on the host's loopback) gets it with
:meth:`NetNamespace.forward_loopback`, so the test kubeconfig works there unchanged.

Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2. Where a namespace cannot be made the
helpers raise :class:`NetNamespaceError` saying why: tests using them fail, they never skip.
Used by ``tests/webhook/test_webhook_service_cluster.py`` and
``tests/registry_v1_cluster/test_webhook_service_cluster.py``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NetNamespace", "NetNamespaceError", "endpoint_slice", "network_namespace"]

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_SUBNET = "10.203"
_NETNS_DIR = Path("/run/netns")
_NETNS_ETC = Path("/etc/netns")  # `ip netns exec` mounts these files over /etc inside
# Loaded once, before any fork: a child of a threaded process must not dlopen.
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class NetNamespaceError(RuntimeError):
    """The network namespace, its veth pair or a process in it could not be set up."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    ip = shutil.which("ip") or "/usr/sbin/ip"
    if not Path(ip).exists():
        raise NetNamespaceError(
            "the `ip` command (iproute2) is missing: install it (apt-get install iproute2)"
        )
    done = subprocess.run([ip, *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise NetNamespaceError(
            f"`ip {' '.join(args)}` failed ({done.returncode}): {done.stderr.strip()}; "
            "network namespaces need root or CAP_NET_ADMIN and CAP_SYS_ADMIN"
        )
    return done


def _free_octet() -> int:
    """A third octet X such that no interface on the host uses 10.203.X.0/24."""
    used = _ip("-o", "-4", "addr", "show").stdout
    candidates = [x for x in range(1, 255) if f" {_SUBNET}.{x}." not in used]
    if not candidates:
        raise NetNamespaceError(f"every {_SUBNET}.X.0/24 is in use on this host")
    return secrets.choice(candidates)


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the test process dies (never orphaned)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class NetNamespace:
    """A live namespace: its name, the two addresses, and the processes started in it."""

    name: str
    host_interface: str
    host_ip: str
    ip: str
    """The namespace side's address: what an EndpointSlice names."""
    _processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _closers: list[contextlib.ExitStack] = field(default_factory=list)

    def popen(self, argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside the namespace (``ip netns exec``); stopped at teardown."""
        ip = shutil.which("ip") or "/usr/sbin/ip"
        process = subprocess.Popen(  # type: ignore[call-overload]
            [ip, "netns", "exec", self.name, *argv],
            preexec_fn=_die_with_parent,  # noqa: PLW1509  (prctl only; libc loaded before)
            **kwargs,
        )
        self._processes.append(process)
        return process  # type: ignore[no-any-return]

    def stop(self, process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
        """Terminate ``process`` (then kill it), reap it and close its pipes."""
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if process in self._processes:
            self._processes.remove(process)

    def bound_socket(self, host: str, port: int) -> socket.socket:
        """A TCP socket listening on ``host:port`` inside the namespace (for this process)."""
        created: list[socket.socket] = []
        failed: list[BaseException] = []

        def inside() -> None:
            # setns changes only the calling thread's namespace: do it in a thread of its own
            # and switch back, so the rest of the process never leaves the host's network.
            libc = _LIBC
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            target = os.open(_NETNS_DIR / self.name, os.O_RDONLY)
            try:
                if libc.setns(target, _CLONE_NEWNET) != 0:
                    errno = ctypes.get_errno()
                    raise NetNamespaceError(f"setns({self.name}): {os.strerror(errno)}")
                try:
                    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    sock.bind((host, port))
                    sock.listen(16)
                    created.append(sock)
                finally:
                    if libc.setns(own, _CLONE_NEWNET) != 0:
                        raise NetNamespaceError("could not return to the host's network")
            except BaseException as exc:
                failed.append(exc)
            finally:
                os.close(own)
                os.close(target)

        thread = threading.Thread(target=inside, name=f"setns-{self.name}")
        thread.start()
        thread.join()
        if failed:
            raise NetNamespaceError(f"cannot listen in {self.name}: {failed[0]}") from failed[0]
        return created[0]

    def forward_loopback(self, port: int) -> None:
        """Make the host's ``127.0.0.1:port`` answer at ``127.0.0.1:port`` inside the namespace
        (byte for byte, TLS untouched), until teardown: the test kubeconfig works there as is."""
        listener = self.bound_socket("127.0.0.1", port)
        stack = contextlib.ExitStack()
        stack.callback(listener.close)
        self._closers.append(stack)
        threading.Thread(
            target=_forward, args=(listener, port), name=f"forward-{self.name}", daemon=True
        ).start()

    def close(self) -> None:
        """Stop the processes and forwarders started here (the namespace itself: see
        :func:`network_namespace`)."""
        for process in list(self._processes):
            self.stop(process)
        for stack in self._closers:
            stack.close()
        self._closers.clear()


def endpoint_slice(
    *, service: str, namespace: str, ip: str, port: int, port_name: str, labels: dict[str, str]
) -> dict[str, Any]:
    """An EndpointSlice naming ``ip:port`` for ``service``'s port ``port_name``: the API server
    resolves webhook and aggregated-API Services through EndpointSlices (aggregator routing), and
    a slice under a manager of our own is left alone by the EndpointSlice controller."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-netns",
            "namespace": namespace,
            "labels": {
                **labels,
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": "netns.test.pivoter.io",
            },
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
    }


def _forward(listener: socket.socket, port: int) -> None:
    while True:
        try:
            inner, _ = listener.accept()
        except OSError:
            return  # closed at teardown
        try:
            outer = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            inner.close()
            continue
        threading.Thread(target=_pump, args=(inner, outer), daemon=True).start()


def _pump(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    a.settimeout(None)
    b.settimeout(None)
    peers = {a: b, b: a}
    with selectors.DefaultSelector() as selector, a, b:
        selector.register(a, selectors.EVENT_READ)
        selector.register(b, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select():
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(65536)
                    if not data:
                        return
                    peers[source].sendall(data)
                except OSError:
                    return


@contextlib.contextmanager
def network_namespace(prefix: str = "pvt") -> Iterator[NetNamespace]:
    """Create a namespace with a veth pair to the host (``10.203.X.1/30`` host side,
    ``10.203.X.2/30`` inside, loopback up); remove all of it on exit, whatever happened."""
    token = secrets.token_hex(4)
    name = f"{prefix}-{token}"
    host_if, inner_if = f"vh{token}", f"vn{token}"  # interface names: at most 15 characters
    x = _free_octet()
    host_ip, ns_ip = f"{_SUBNET}.{x}.1", f"{_SUBNET}.{x}.2"
    netns: NetNamespace | None = None
    try:
        _ip("netns", "add", name)
        _private_resolver(name, ns_ip)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", inner_if)
        _ip("link", "set", inner_if, "netns", name)
        _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", name, "addr", "add", f"{ns_ip}/30", "dev", inner_if)
        _ip("-n", name, "link", "set", inner_if, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "route", "add", "default", "via", host_ip)
        netns = NetNamespace(name=name, host_interface=host_if, host_ip=host_ip, ip=ns_ip)
        yield netns
    finally:
        try:
            if netns is not None:
                netns.close()
        finally:
            # Deleting one end of a veth pair deletes both; both calls are safe when half made.
            _ip("link", "del", host_if, check=False)
            _ip("netns", "del", name, check=False)
            shutil.rmtree(_NETNS_ETC / name, ignore_errors=True)


def _private_resolver(name: str, ns_ip: str) -> None:
    """Name lookups inside answer at once: the host's DNS server is out of reach from there, and
    servers that resolve their own address (``http.server`` does) would wait for it to time out."""
    etc = _NETNS_ETC / name
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "hosts").write_text(f"127.0.0.1 localhost\n{ns_ip} {name}\n")
    (etc / "resolv.conf").write_text("# no name server inside the test namespace\n")


@contextlib.contextmanager
def routed_address(netns: NetNamespace, address: str) -> Iterator[None]:
    """Make ``address`` (a pod's IP that nothing on the host serves, as kwok gives them) answer
    inside ``netns``: it is added to the namespace's loopback, and the host routes
    ``address/32`` to the namespace's side of the veth pair, so a server bound to it there (see
    :meth:`NetNamespace.bound_socket`) is what the API server reaches through the Service's
    EndpointSlice that kube-controller-manager wrote for the pod. Both are removed on exit,
    whatever happened (deleting the namespace would drop them too)."""
    added: list[list[str]] = []
    try:
        _ip("-n", netns.name, "addr", "add", f"{address}/32", "dev", "lo")
        added.append(["-n", netns.name, "addr", "del", f"{address}/32", "dev", "lo"])
        _ip("route", "add", f"{address}/32", "via", netns.ip, "dev", netns.host_interface)
        added.append(
            ["route", "del", f"{address}/32", "via", netns.ip, "dev", netns.host_interface]
        )
        yield
    finally:
        for undo in reversed(added):
            _ip(*undo, check=False)
