"""Build an authenticated ``kubernetes`` ApiClient: explicit kubeconfig, in-cluster, or default.

Called once by ``pivoter run`` (and by tests) to get the client every informer, controller and
leader elector of a :class:`pivoter.runtime.Manager` shares. The order mirrors kubectl and
controller-runtime: ``--kubeconfig`` first, then the in-cluster service account when running in a
Pod, then ``$KUBECONFIG`` or ``~/.kube/config``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from pivoter import __version__
from resolver.net.credentials import InvalidCredential, bearer_token
from resolver.safedata import load_yaml

__all__ = ["KubeConfigError", "load_client"]

_IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


_MAX_REFERENCED_BYTES = 1024 * 1024
"""Largest certificate, key or token file a kubeconfig may name (they are a few KiB)."""

# Files a kubeconfig names, which the kubernetes library reads whole: (section, entry, key).
_REFERENCED_FILES = (
    ("clusters", "cluster", "certificate-authority"),
    ("users", "user", "client-certificate"),
    ("users", "user", "client-key"),
    ("users", "user", "tokenFile"),
)


def _referenced_file_problem(data: dict[str, object], base: Path) -> str:
    """Why a file the kubeconfig names must not be read ("" when none): a FIFO would block the
    read for ever and a device such as /dev/zero would fill memory."""
    for section, entry, key in _REFERENCED_FILES:
        items = data.get(section)
        for item in items if isinstance(items, list) else []:
            body = item.get(entry) if isinstance(item, dict) else None
            name = body.get(key) if isinstance(body, dict) else None
            if not isinstance(name, str) or not name:
                continue
            target = base / os.path.expanduser(name)
            try:
                info = target.stat()
            except (OSError, ValueError):
                continue  # missing: the kubernetes library says so itself
            if not stat.S_ISREG(info.st_mode):
                return f"{key} {name} is not a regular file"
            if info.st_size > _MAX_REFERENCED_BYTES:
                return f"{key} {name} is larger than {_MAX_REFERENCED_BYTES // 1024} KiB"
    return ""


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
        where = f"kubeconfig {path}: the user's token"
    elif os.environ.get(_IN_CLUSTER_ENV):
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise KubeConfigError(f"in-cluster configuration is unusable: {exc}") from exc
        where = "the in-cluster service account token"
    else:
        default = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "~/.kube/config"
        path = Path(default).expanduser()
        if not path.is_file():
            raise KubeConfigError(
                f"no kubeconfig given (--kubeconfig), not running in a cluster "
                f"(${_IN_CLUSTER_ENV} unset) and {path} does not exist"
            )
        _load_file(path, context, configuration)
        where = f"kubeconfig {path}: the user's token"
    _check_tokens(configuration, where)
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, 32)
    api_client = client.ApiClient(configuration)
    api_client.user_agent = f"pivoter/{__version__}"  # names pivoter in the apiserver's audit log
    return api_client


def _check_tokens(configuration: client.Configuration, where: str) -> None:
    """Check the bearer token the kubernetes loader put in ``configuration`` as every other
    credential is checked (:mod:`resolver.net.credentials`), trimmed as client-go trims a token
    file: the loader takes a ``token``/``tokenFile`` as it stands, so a newline in it became
    urllib3's ``ValueError: Invalid header value b'Bearer <the token>\\n'`` (a traceback holding
    the token) at the first request."""
    for key, value in list((configuration.api_key or {}).items()):
        scheme, _, token = str(value).partition(" ")
        if scheme.lower() != "bearer":
            continue
        try:
            token = bearer_token(token, where=where, trim=True)
        except InvalidCredential as exc:
            raise KubeConfigError(str(exc)) from None
        configuration.api_key[key] = f"{scheme} {token}"


def _load_file(path: Path, context: str | None, configuration: client.Configuration) -> None:
    # Read through the safe loader first (size, nesting and alias limits, one line per error):
    # the kubernetes library's own yaml.safe_load would crash on a deeply nested file, and it
    # reports a file of the wrong shape as TypeError/AttributeError/KeyError.
    try:
        data = load_yaml(path.read_bytes(), where=str(path))
    except OSError as exc:
        raise KubeConfigError(f"kubeconfig {path} cannot be read: {exc.strerror}") from exc
    except ValueError as exc:  # SafeDataError, UnicodeDecodeError
        raise KubeConfigError(f"kubeconfig {path} is unusable: {exc}") from exc
    if not isinstance(data, dict):
        raise KubeConfigError(f"kubeconfig {path} is unusable: not a YAML mapping")
    problem = _referenced_file_problem(data, path.parent)
    if problem:
        raise KubeConfigError(f"kubeconfig {path} is unusable: {problem}")
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(path), context=context, client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError) as exc:
        raise KubeConfigError(f"kubeconfig {path} is unusable: {exc}") from exc
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        # Only the kubernetes loader runs in this block: these mean a malformed file.
        raise KubeConfigError(
            f"kubeconfig {path} is unusable: malformed ({type(exc).__name__}: {exc})"
        ) from exc
