"""API access as the daemon itself or as a named service account (impersonation), one client per
identity, kept for the life of the process.

Who installs a bundle is who the API server authorizes: the BundleDeployment controller applies
as the BundleDeployment's ``spec.serviceAccount``, and the grouped pivot's dry run checks as the
same identity (:mod:`pivoter.pivot.prepare`). Each identity has its own :class:`Kube`, so its
discovery cache is its own too.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from kubernetes.client import ApiClient

from pivoter.kube.client import Kube

__all__ = ["Identities", "service_account_user"]


def service_account_user(service_account: Mapping[str, Any] | None) -> str:
    """The user name of a ``{name, namespace}`` service account; empty for the daemon itself."""
    if not service_account:
        return ""
    return f"system:serviceaccount:{service_account['namespace']}:{service_account['name']}"


class Identities:
    """A :class:`Kube` per identity, built from the daemon's own client configuration."""

    def __init__(self, kube: Kube) -> None:
        self._configuration = kube.api_client.configuration
        self._kube = kube
        self._apis: dict[str, Kube] = {}
        self._lock = threading.Lock()

    def api_for(self, service_account: Mapping[str, Any] | None) -> Kube:
        """The daemon's own access (``None``), or one impersonating the service account."""
        user = service_account_user(service_account)
        with self._lock:
            api = self._apis.get(user)
            if api is None:
                client = ApiClient(self._configuration)
                if user:
                    # The API server adds the service account's groups when none are given.
                    client.set_default_header("Impersonate-User", user)  # type: ignore[no-untyped-call]
                api = self._apis[user] = Kube(client, observer=self._observe)
            return api

    def _observe(self, method: str, path: str, query: list[tuple[str, str]], code: int) -> None:
        """Every identity's requests reach the daemon's observer (the request counter), as it
        is now."""
        observer = self._kube.observer
        if observer is not None:
            observer(method, path, query, code)
