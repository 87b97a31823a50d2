"""Fixtures for the end-to-end tests: ``pivoter run`` as a subprocess against the ``cluster``.

One daemon serves the whole ``tests/e2e`` package (started on first use, stopped at the end): it
runs the controllers, the content server and the admission webhook (registered by URL), with a
temporary content store and its own system namespace. The tests talk to it only through the API
server (and ``status.contentURL``). Real servers on loopback provide the bundle sources: the
distribution registry (anonymous and htpasswd), ``git http-backend`` (anonymous http and https
with basic auth) and small HTTP servers for tarballs.
"""

from __future__ import annotations

import contextlib
import http.server
from collections.abc import Iterator
from pathlib import Path

import pytest

from pivoter.kube import Kube, NotFound, load_client
from tests.cluster import TestCluster, session_labels, unique_name
from tests.e2e.daemon import Daemon
from tests.e2e.helpers import E2E, NAMESPACES, make_bundle_repo
from tests.provisioners.git_servers import Repo, git, serve_git_http
from tests.provisioners.oci import Pusher
from tests.provisioners.servers import Registry, Tls, make_tls, run_registry, serve_http

REPO = Path(__file__).resolve().parents[2]
REGISTRY_USER, REGISTRY_PASSWORD = "puller", "e2e-pull-pass"
GIT_USER, GIT_PASSWORD = "gituser", "e2e-git-pass"


@pytest.fixture(scope="package")
def admin(cluster: TestCluster) -> Iterator[Kube]:
    """pivoter's client boundary as the cluster admin."""
    api_client = load_client(kubeconfig=str(cluster.kubeconfig))
    yield Kube(api_client)
    api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="package")
def all_crds(crds: None) -> None:
    """Every CRD in crds/ (the daemon's informers watch all of them), Established."""


@pytest.fixture(scope="package")
def system_namespace(admin: Kube) -> Iterator[str]:
    """The daemon's namespace: Secrets and ConfigMaps of bundle sources live here."""
    name = unique_name("e2e-system")
    admin.create(
        NAMESPACES,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **_labels()}},
    )
    yield name
    with contextlib.suppress(NotFound):
        admin.delete(NAMESPACES, name)


def _labels() -> dict[str, dict[str, str]]:
    return {"labels": session_labels()}


@pytest.fixture(scope="package")
def daemon(
    cluster: TestCluster,
    admin: Kube,
    all_crds: None,
    system_namespace: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Daemon]:
    """``pivoter run`` with content server and webhook, for the whole package."""
    root = tmp_path_factory.mktemp("daemon")
    running = Daemon(
        cluster.kubeconfig,
        namespace=system_namespace,
        store_dir=root / "store",
        log=root / "pivoter.log",
    )
    running.start()
    try:
        yield running
    finally:
        running.stop(admin)


@pytest.fixture
def e2e(daemon: Daemon, admin: Kube, namespace: str) -> Iterator[E2E]:
    """Helpers bound to the running daemon; deletes the BundleDeployments a test created."""
    helper = E2E(admin, daemon, namespace)
    yield helper
    helper.cleanup()


@pytest.fixture(scope="package")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Tls:
    """A test CA with a server certificate for 127.0.0.1."""
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="package")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """An anonymous plain-http registry on loopback."""
    with run_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="package")
def private_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A plain-http registry with htpasswd (Basic) authentication."""
    with run_registry(
        tmp_path_factory.mktemp("private-registry"),
        htpasswd=(REGISTRY_USER, REGISTRY_PASSWORD),
    ) as running:
        yield running


@pytest.fixture(scope="package")
def pusher(registry: Registry) -> Pusher:
    """Pushes images to the anonymous registry."""
    return Pusher(registry.base)


@pytest.fixture(scope="package")
def git_namespace(admin: Kube) -> Iterator[str]:
    """The namespace the objects of the git repositories' bundles live in."""
    name = unique_name("e2e-git")
    admin.create(
        NAMESPACES,
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **_labels()}},
    )
    yield name
    with contextlib.suppress(NotFound):
        admin.delete(NAMESPACES, name)


@pytest.fixture(scope="package")
def git_root(tmp_path_factory: pytest.TempPathFactory, git_namespace: str) -> Path:
    """Bare repositories ``public.git`` and ``private.git`` (see :func:`make_bundle_repo`)."""
    root = tmp_path_factory.mktemp("git")
    make_bundle_repo(root, "public", git_namespace)
    make_bundle_repo(root, "private", git_namespace)
    return root


@pytest.fixture(scope="package")
def public_repo(git_root: Path) -> Repo:
    """Commit ids of ``public.git``."""
    bare = git_root / "public.git"
    return Repo(bare, git("rev-parse", "v1^{commit}", cwd=bare), git("rev-parse", "main", cwd=bare))


@pytest.fixture(scope="package")
def git_http(git_root: Path) -> Iterator[str]:
    """Anonymous git over plain http."""
    with serve_git_http(git_root) as url:
        yield url


@pytest.fixture(scope="package")
def git_https_private(git_root: Path, tls: Tls) -> Iterator[str]:
    """git over https with basic auth (certificate from the test CA)."""
    with serve_git_http(git_root, credentials=(GIT_USER, GIT_PASSWORD), tls=tls) as url:
        yield url


class Tarballs:
    """A loopback HTTP server: ``files[path]`` with 200, ``/v2/*`` with 500 (a broken registry)."""

    def __init__(self, url: str, files: dict[str, bytes], requests: list[str]) -> None:
        self.url = url
        self.files = files
        self.requests = requests
        """Paths asked for, in order."""

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT``, usable as an image registry host."""
        return self.url.removeprefix("http://")

    def publish(self, path: str, data: bytes) -> str:
        """Serve ``data`` at ``path``; returns its URL."""
        self.files[path] = data
        return f"{self.url}{path}"


@pytest.fixture(scope="package")
def tarballs() -> Iterator[Tarballs]:
    """The http source's server (and a registry that answers 500)."""
    files: dict[str, bytes] = {}
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            if self.path.startswith("/v2/"):
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = files.get(self.path)
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET

        def log_message(self, *_: object) -> None:
            pass

    with serve_http(Handler) as url:
        yield Tarballs(url, files, requests)
