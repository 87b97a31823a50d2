"""Test-side handle on a Kubernetes control plane, used by the fixtures in tests/conftest.py.

Wraps ``hack/cluster/localcluster`` (which runs the processes) with what tests need: a
``kubernetes`` client, less privileged kubeconfigs, etcd compaction, apiserver restarts, and the
naming rule plus label that keep one test's cluster-scoped objects out of another's way.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

_HACK_CLUSTER = Path(__file__).resolve().parents[1] / "hack" / "cluster"
if str(_HACK_CLUSTER) not in sys.path:
    sys.path.insert(0, str(_HACK_CLUSTER))

from localcluster import (  # noqa: E402  (needs the path above)
    ClusterConfig,
    ClusterError,
    LocalCluster,
    running_components,
    sweep_orphans,
)
from localcluster.cluster import clear_stale  # noqa: E402

from tests.polling import wait_for  # noqa: E402  (re-exported)

__all__ = [
    "ClusterConfig",
    "ClusterError",
    "LocalCluster",
    "TestCluster",
    "clear_stale",
    "running_components",
    "session_labels",
    "unique_name",
    "wait_for",
]

# Every object a test creates outside a namespace carries this label with the session's token;
# the session deletes whatever still carries it when it ends.
SESSION_LABEL = "test.pivoter.io/session"
SESSION_TOKEN = secrets.token_hex(3)
_counter = itertools.count()
CLUSTERS_DIR = Path(tempfile.gettempdir()) / "pivoter-test-clusters"


def unique_name(prefix: str) -> str:
    """A DNS-1123 name no other test (or concurrent session) uses: ``<prefix>-<session>-<n>``."""
    name = f"{prefix}-{SESSION_TOKEN}-{next(_counter)}".lower()
    if len(name) > 63:
        raise ValueError(f"prefix {prefix!r} is too long for a Kubernetes name")
    return name


def session_labels() -> dict[str, str]:
    """The labels that put an object under this session's cleanup sweep."""
    return {SESSION_LABEL: SESSION_TOKEN}


def raw_request(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    query: list[tuple[str, str]] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    preload: bool = True,
) -> Any:
    """One request with the official client's connection and credentials; raises ApiException
    on a non-2xx answer. Returns the decoded JSON, or (``preload=False``) the open response."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    method, url, headers, _, _ = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=query or [],
        header_params=headers,
        auth_settings=["BearerToken"],
    )
    payload = json.dumps(body) if body is not None else None
    response = api.call_api(
        method, url, header_params=headers, body=payload, _request_timeout=None if preload else 30
    )
    if not preload:
        return response.response
    data = response.read()
    if not 200 <= response.status < 300:
        raise ApiException(status=response.status, reason=response.reason)
    return json.loads(data) if data else {}


class TestCluster:
    """What the ``cluster`` fixture yields: a running control plane and helpers around it."""

    __test__ = False  # not a test class, despite its name

    def __init__(self, kubeconfig: Path, local: LocalCluster | None) -> None:
        self.kubeconfig = kubeconfig
        self.local = local
        self._clients: list[client.ApiClient] = []
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        self.server: str = configuration.host

    @classmethod
    def start(cls, **overrides: Any) -> TestCluster:
        """Start a private control plane for this test session (dies with the session)."""
        sweep_orphans(CLUSTERS_DIR)
        CLUSTERS_DIR.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="cluster-", dir=CLUSTERS_DIR))
        local = LocalCluster.start(root, ClusterConfig(die_with_parent=True, **overrides))
        return cls(local.kubeconfig, local)

    @classmethod
    def existing(cls, kubeconfig: Path) -> TestCluster:
        """Use a running cluster; the helpers that need its processes work when it was made by
        hack/cluster-up.sh (its state.json sits next to the kubeconfig)."""
        local = None
        if (kubeconfig.parent / "state.json").is_file():
            local = LocalCluster.attach(kubeconfig.parent)
        return cls(kubeconfig, local)

    def _require_local(self, what: str) -> LocalCluster:
        if self.local is None:
            raise ClusterError(
                f"{what} needs a cluster started by pivoter's hack/cluster tooling; "
                f"{self.kubeconfig} belongs to some other cluster"
            )
        return self.local

    def api_client(self, kubeconfig: Path | None = None) -> client.ApiClient:
        """A new ApiClient for the admin (or for ``kubeconfig``); closed at the end."""
        api = config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))
        self._clients.append(api)
        return api

    def dynamic_client(self) -> dynamic.DynamicClient:
        """A discovery-backed dynamic client for the admin."""
        return dynamic.DynamicClient(self.api_client())

    def user_kubeconfig(self, user: str, groups: list[str] | None = None) -> Path:
        """A kubeconfig for a less privileged ``user`` in ``groups`` (no rights granted)."""
        return self._require_local("user_kubeconfig").user_kubeconfig(user, groups or [])

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision and return it; older resourceVersions become 410."""
        return self._require_local("compact_etcd").compact_etcd()

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver (same port and data); returns once it is ready again."""
        self._require_local("restart_apiserver").restart_apiserver()

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only; call :meth:`start_apiserver` to bring it back."""
        self._require_local("stop_apiserver").stop_apiserver()

    def start_apiserver(self) -> None:
        """Start kube-apiserver after :meth:`stop_apiserver`; returns once it is ready."""
        self._require_local("start_apiserver").start_apiserver()

    def sweep(self) -> list[str]:
        """Delete every cluster-scoped object labelled with this session (namespaces included)."""
        selector = f"{SESSION_LABEL}={SESSION_TOKEN}"
        api = self.api_client()
        deleted = []
        for group_version in _preferred_group_versions(api):
            path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            try:
                listing = raw_request(api, "GET", path)
            except ApiException:
                continue
            for resource in listing.get("resources", []):
                verbs = resource.get("verbs", [])
                if resource.get("namespaced") or "/" in resource["name"] or "list" not in verbs:
                    continue
                if "delete" not in verbs:
                    continue
                collection = f"{path}/{resource['name']}"
                items = raw_request(
                    api, "GET", collection, query=[("labelSelector", selector)]
                ).get("items", [])
                for item in items:
                    name = item["metadata"]["name"]
                    try:
                        raw_request(api, "DELETE", f"{collection}/{name}")
                        deleted.append(f"{resource['name']}/{name}")
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
        return deleted

    def close(self) -> None:
        """Close the API clients handed out so far."""
        for api in self._clients:
            api.close()
        self._clients.clear()

    def stop(self) -> None:
        """Stop a private control plane and delete its data (no-op for an existing cluster)."""
        self.close()
        if self.local is not None and self.local.config.die_with_parent:
            self.local.stop()


def _preferred_group_versions(api: client.ApiClient) -> list[str]:
    groups = client.ApisApi(api).get_api_versions()
    return ["v1"] + [
        g.preferred_version.group_version for g in groups.groups if g.preferred_version
    ]


def env_kubeconfig() -> Path | None:
    """The kubeconfig named by PIVOTER_TEST_KUBECONFIG, if set."""
    value = os.environ.get("PIVOTER_TEST_KUBECONFIG")
    return Path(value).expanduser().resolve() if value else None
