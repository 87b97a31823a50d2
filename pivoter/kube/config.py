"""Build an authenticated ``kubernetes`` ApiClient: explicit kubeconfig, in-cluster, or default.

Called once by ``pivoter run`` (and by tests) to get the client every informer, controller and
leader elector of a :class:`pivoter.controller.Manager` shares. The order mirrors kubectl and
controller-runtime: ``--kubeconfig`` first, then the in-cluster service account when running in a
Pod, then ``$KUBECONFIG`` or ``~/.kube/config``.
"""

from __future__ import annotations

import os
from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from pivoter import __version__

__all__ = ["KubeConfigError", "load_client"]

_IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


class KubeConfigError(Exception):
    """No usable credentials were found; the message says where pivoter looked."""


def load_client(
    kubeconfig: str | Path | None = None, *, context: str | None = None
) -> client.ApiClient:
    """Return an ApiClient for ``kubeconfig``, else in-cluster credentials, else the default file.

    The connection pool is sized for a daemon (informer watches hold connections open while
    workers make requests), not for a one-shot script.
    """
    configuration = client.Configuration()
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise KubeConfigError(f"kubeconfig {path} does not exist")
        _load_file(path, context, configuration)
    elif os.environ.get(_IN_CLUSTER_ENV):
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise KubeConfigError(f"in-cluster configuration is unusable: {exc}") from exc
    else:
        default = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
        path = Path(default).expanduser()
        if not path.is_file():
            raise KubeConfigError(
                f"no kubeconfig given (--kubeconfig), not running in a cluster "
                f"(${_IN_CLUSTER_ENV} unset) and {path} does not exist"
            )
        _load_file(path, context, configuration)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
    api_client = client.ApiClient(configuration)
    api_client.user_agent = f"pivoter/{__version__}"  # names pivoter in the apiserver's audit log
    return api_client


def _load_file(path: Path, context: str | None, configuration: client.Configuration) -> None:
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(path), context=context, client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError) as exc:
        raise KubeConfigError(f"kubeconfig {path} is unusable: {exc}") from exc
