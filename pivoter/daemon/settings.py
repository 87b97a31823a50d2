"""What the daemon is asked to build and run, with every default of ``pivoter run``.

:class:`Settings` says what :func:`pivoter.daemon.product.build` registers on a Manager (which
controllers, where they keep their state, which servers); :class:`RunSettings` adds what the
process needs around it (the kubeconfig, the metrics and probe endpoints, leader election) for
:func:`pivoter.daemon.process.run`. ``pivoter run`` (:mod:`pivoter.cli.run`) fills both from its
flags; test fixtures fill :class:`Settings` themselves, asking for the part of the product they
need through :class:`Scope` and the other fields.

The ``DEFAULT_*`` constants are the defaults of ``pivoter run``'s flags, here and nowhere else:
the command (:mod:`pivoter.cli.run`) imports this module to show them in
``--help``, so it imports nothing beyond the standard library (``tests/unit/test_cli_imports.py``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

if TYPE_CHECKING:
    from pivoter.catalogs import SourceSettings

__all__ = [
    "DEFAULT_CATALOGD_ADDRESS",
    "DEFAULT_CONCURRENT",
    "DEFAULT_CONTENT_ADDRESS",
    "DEFAULT_FULL_CHECK_INTERVAL",
    "DEFAULT_HEALTH_ADDRESS",
    "DEFAULT_HEALTH_INTERVAL",
    "DEFAULT_LEASE",
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_METRICS_ADDRESS",
    "DEFAULT_NAMESPACE",
    "DEFAULT_OLMV1",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "DEFAULT_STORE",
    "DEFAULT_WEBHOOK_ADDRESS",
    "IN_CLUSTER_NAMESPACE",
    "OLMV1_MODES",
    "Address",
    "Election",
    "OlmV1Mode",
    "RunSettings",
    "Scope",
    "Settings",
    "Webhook",
    "own_namespace",
]

Address = tuple[str, int]
"""A bind address: host (``0.0.0.0`` for every interface) and port (0: any free port)."""

OlmV1Mode = Literal["auto", "serve", "read"]
"""``--olmv1``: the values of :class:`pivoter.olmv1.Mode`."""

OLMV1_MODES: tuple[OlmV1Mode, ...] = get_args(OlmV1Mode)

DEFAULT_NAMESPACE = "pivoter-system"
"""pivoter's namespace outside a Pod (in a Pod: the Pod's own, :func:`own_namespace`)."""
DEFAULT_LEASE = "pivoter-leader.pivoter.io"
DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
DEFAULT_STORE = Path("/var/cache/pivoter/bundles")
DEFAULT_METRICS_ADDRESS = ":8080"
DEFAULT_HEALTH_ADDRESS = ":8081"
DEFAULT_CONTENT_ADDRESS = "0"
"""The content server is off unless asked for (``0`` disables a server)."""
DEFAULT_CATALOGD_ADDRESS = ":8082"
DEFAULT_WEBHOOK_ADDRESS = "0"
DEFAULT_OLMV1: OlmV1Mode = "auto"
DEFAULT_HEALTH_INTERVAL = 10.0
"""Seconds between health checks of an installed BundleDeployment."""
DEFAULT_FULL_CHECK_INTERVAL = 600.0
"""Seconds between full drift checks of an installed BundleDeployment."""
DEFAULT_CONCURRENT = 4
"""Workers per controller of inputs and BundleDeployments (``--concurrent``)."""

IN_CLUSTER_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def own_namespace() -> str:
    """The Pod's namespace when running in a cluster, else :data:`DEFAULT_NAMESPACE`."""
    try:
        return IN_CLUSTER_NAMESPACE.read_text().strip() or DEFAULT_NAMESPACE
    except OSError:
        return DEFAULT_NAMESPACE


class Scope(enum.Enum):
    """How much of the product :func:`~pivoter.daemon.product.build` registers; each scope
    includes the ones before it."""

    BUNDLES = "bundles"
    """The Bundle and BundleDeployment controllers only (tests of provisioning alone)."""
    CATALOGS = "catalogs"
    """And the catalogs: the Catalog controller and OLM's readers, and, when OLM v1's APIs are
    served, the ClusterCatalog controller and the catalogd API (pivoter as catalogd next to
    another operator-controller)."""
    ALL = "all"
    """And the inputs: ResolveSets, Resolutions, PlatformOperators, ClusterExtensions when OLM
    v1's APIs are served, OLM v0 adoption when asked (``pivoter run``)."""


@dataclass(frozen=True)
class Webhook:
    """The admission webhook (``--webhook-*``; :mod:`pivoter.daemon.webhook`)."""

    address: Address
    cert_dir: Path | None = None
    """``tls.crt``, ``tls.key`` and ``ca.crt``; None: a certificate is generated at start."""
    url: str = ""
    """Register the webhooks at this https base URL (daemon outside the cluster)."""
    service: tuple[str, str] | None = None
    """Register the webhooks through this Service (namespace, name), port 443."""


@dataclass(frozen=True)
class Settings:
    """What :func:`pivoter.daemon.product.build` registers: controllers, caches and servers.

    The defaults are ``pivoter run``'s, except that no server listens unless given an address
    (``pivoter run`` always passes its flags' addresses).
    """

    namespace: str | None = None
    """pivoter's namespace (Secrets and ConfigMaps of sources, ResolveSets); None:
    :func:`own_namespace`."""
    store_dir: Path = DEFAULT_STORE
    """The content store of unpacked bundles."""
    scope: Scope = Scope.ALL
    content_address: Address | None = None
    """Where the content server listens (``/bundles/<name>.tgz``); None: not served."""
    content_url: str = ""
    """The base URL clients reach the content server at (``status.contentURL``)."""
    platform_operator_service_account: tuple[str, str] | None = None
    """(namespace, name) of the account that installs PlatformOperators; None: pivoter's own."""
    olmv1: OlmV1Mode = DEFAULT_OLMV1
    catalogd_address: Address | None = None
    """Where the catalogd HTTP API listens when OLM v1's APIs are served; None: not served."""
    catalogd_url: str = ""
    """The base URL of that API in ClusterCatalogs' ``status.urls.base``; empty: the bound
    address as seen from this host."""
    catalogd_ca: Path | None = None
    """A PEM CA that signed catalogd's HTTPS certificate, for reading the ClusterCatalogs
    catalogd serves (``--catalogd-ca``); None: the system's CAs."""
    olmv1_recheck: float = 30.0
    """Seconds between two decisions of ``olmv1="auto"`` while it reads (sooner when an OLM
    Lease expires; :class:`pivoter.olmv1.mode.AutoMode`)."""
    adopt_olmv0: bool = False
    """Run the OLM v0 adoption controller (:mod:`pivoter.olmv0.controller`)."""
    webhook: Webhook | None = None
    """The admission webhook; None: not served."""
    read_olm_catalogs: bool = True
    """Read OLM v0's CatalogSources and catalogd's ClusterCatalogs into the catalog cache when
    the API server serves them (fixtures that must not see other tests' catalogs say False)."""
    catalog_sources: SourceSettings | None = None
    """Limits and work directory of the Catalog controller's sources; None: a private
    temporary directory and the default limits."""
    cluster_catalog_sources: SourceSettings | None = None
    """The same for the ClusterCatalogs pivoter serves."""
    health_interval: float = DEFAULT_HEALTH_INTERVAL
    full_check_interval: float = DEFAULT_FULL_CHECK_INTERVAL
    global_pull_secret: tuple[str, str] | None = None
    """(namespace, name) of the pull secret offered to every registry after the more specific
    ones (OLM v1's ``--global-pull-secret``); None: none."""
    registries_conf: Path | None = None
    """A containers ``registries.conf`` (v2) whose mirrors every pull uses; None: none (the
    cluster's ImageDigestMirrorSets and ImageTagMirrorSets still apply when served)."""
    concurrent: int = DEFAULT_CONCURRENT
    """Workers of each controller of inputs and BundleDeployments (``--concurrent``, Flux's
    name for the same setting): how many objects of one kind are reconciled at once."""


@dataclass(frozen=True)
class Election:
    """Leader election (``--leader-elect``); a None namespace or identity takes the running
    Pod's (:func:`own_namespace`, ``<hostname>_<uuid>``)."""

    namespace: str | None = None
    name: str = DEFAULT_LEASE
    identity: str | None = None
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD


@dataclass(frozen=True)
class RunSettings:
    """Everything ``pivoter run`` was asked (addresses parsed; None disables)."""

    product: Settings
    kubeconfig: str | Path | None = None
    """None: in-cluster, then ``~/.kube/config``."""
    metrics_address: Address | None = None
    health_address: Address | None = None
    election: Election | None = None
