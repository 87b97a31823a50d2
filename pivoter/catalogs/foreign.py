"""Read OLM's ``CatalogSource`` and catalogd's ``ClusterCatalog`` into the catalog cache.

pivoter resolves from these too when their CRDs exist, read-only: it never writes their status.

* ``CatalogSource`` (``operators.coreos.com/v1alpha1``, namespaced, cached as
  ``CatalogSource/<namespace>/<name>``): the gRPC registry at ``spec.address``, or, for an
  image-backed source whose pod OLM runs, ``status.registryService``
  (``<serviceName>.<serviceNamespace>.svc:<port>``). Priority ``spec.priority``; polled every
  ``spec.updateStrategy.registryPoll.interval`` (default :data:`DEFAULT_INTERVAL`).
* ``ClusterCatalog`` (``olm.operatorframework.io/v1``, cached as ``ClusterCatalog/<name>``):
  catalogd's HTTP API at ``status.urls.base``. Its content is identified by
  ``status.resolvedSource`` (the image digest catalogd unpacked): it is fetched when that changes,
  plus a slow safety poll. Priority ``spec.priority``. catalogd serves HTTPS with a certificate of
  its own CA: ``pivoter run --catalogd-ca FILE`` (:class:`CatalogdCA`) names that CA; a
  certificate that does not verify is logged as ``ClusterCatalog/<name>: catalog source <url>:
  TLS error: ...`` and retried, the last good content kept.

Called through :func:`pivoter.catalogs.setup.setup`, which only registers these reconcilers
when discovery shows the kinds are served.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pivoter.catalogs.cache import CatalogCache
from pivoter.catalogs.errors import CatalogProblem
from pivoter.catalogs.interval import MIN_INTERVAL, parse_duration, retry_delay
from pivoter.catalogs.poll import Poller
from pivoter.catalogs.sources import ObjectReader, SourceSettings, build_source
from pivoter.kube import Kube, NotFound, Resource
from pivoter.registries import PullSecretRef
from pivoter.runtime.cache import split_key
from pivoter.runtime.controller import Result

__all__ = [
    "CATALOGD_CA",
    "CLUSTER_CATALOG_SAFETY_POLL",
    "DEFAULT_INTERVAL",
    "CatalogdCA",
    "ForeignCatalogReconciler",
    "catalog_source_spec",
    "cluster_catalog_spec",
]

log = logging.getLogger(__name__)

DEFAULT_INTERVAL = 600.0
CLUSTER_CATALOG_SAFETY_POLL = 3600.0

SpecOf = Callable[[Mapping[str, Any]], "ForeignSpec | None"]


@dataclass(frozen=True, slots=True)
class ForeignSpec:
    """What pivoter reads from a foreign catalog object."""

    source: dict[str, Any]
    """A pivoter ``spec.source`` equivalent."""
    priority: int
    interval: float
    identity: str = ""
    """What identifies the content (ClusterCatalog: ``status.resolvedSource``); a change polls."""
    pull_secrets: tuple[PullSecretRef, ...] = ()
    """The pull secrets OLM v0 uses for the catalog's bundle images (a CatalogSource's
    ``spec.secrets``, in its namespace): offered for the bundle images it names."""


def catalog_source_spec(obj: Mapping[str, Any]) -> ForeignSpec | None:
    """The gRPC source of an OLM ``CatalogSource``, or None when it has no address yet."""
    spec = obj.get("spec") or {}
    address = str(spec.get("address") or "")
    if not address:
        service = (obj.get("status") or {}).get("registryService") or {}
        if service.get("serviceName") and service.get("port"):
            namespace = service.get("serviceNamespace") or obj["metadata"].get("namespace")
            address = f"{service['serviceName']}.{namespace}.svc:{service['port']}"
    if not address:
        return None
    try:
        interval = parse_duration(
            str(((spec.get("updateStrategy") or {}).get("registryPoll") or {}).get("interval"))
        )
    except ValueError:
        interval = DEFAULT_INTERVAL
    namespace = str(obj["metadata"].get("namespace") or "")
    secrets = tuple(
        PullSecretRef(namespace, str(name), field="spec.secrets of CatalogSource")
        for name in spec.get("secrets") or []
        if isinstance(name, str) and name
    )
    return ForeignSpec(
        {"type": "grpc", "grpc": {"address": address}},
        int(spec.get("priority") or 0),
        max(MIN_INTERVAL, interval),
        pull_secrets=secrets,
    )


CATALOGD_CA = "--catalogd-ca"
"""The ConfigMap name a ClusterCatalog's source spec gives the CA of ``--catalogd-ca``, which
:meth:`CatalogdCA.reader` answers: not a valid object name, so no real ConfigMap has it."""


class CatalogdCA:
    """The CA of ``pivoter run --catalogd-ca`` (PEM), which signed catalogd's certificate.

    The ClusterCatalog reader checks catalogd's HTTPS certificate against it through the HTTP
    source's own ``caConfigMap`` path: :func:`cluster_catalog_spec` names :data:`CATALOGD_CA` and
    :meth:`reader` answers it with the file. The file is read again at each build of a source
    (a renewed CA is used once it changes; a file that cannot be read then keeps the last one).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._pem = self._read()

    def _read(self) -> bytes:
        """The file's certificates; :class:`ValueError` naming the flag and the file when it
        cannot be read or holds no PEM certificate."""
        try:
            pem = self.path.read_bytes()
        except OSError as exc:
            raise ValueError(f"--catalogd-ca {self.path}: {exc.strerror or exc}") from None
        try:
            ssl.create_default_context(cadata=pem.decode("ascii"))
        except (UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise ValueError(
                f"--catalogd-ca {self.path}: not a PEM CA certificate ({exc})"
            ) from None
        return pem

    def pem(self) -> bytes:
        """The CA now: the file as it is, or the last good content when it cannot be used."""
        try:
            self._pem = self._read()
        except ValueError as exc:
            log.warning("%s; keeping the CA read before", exc)
        return self._pem

    def reader(self, read: ObjectReader) -> ObjectReader:
        """``read``, answering the ConfigMap :data:`CATALOGD_CA` with this CA (key ``ca.crt``)."""

        def reading(kind: str, name: str) -> Mapping[str, Any] | None:
            if (kind, name) == ("ConfigMap", CATALOGD_CA):
                return {"data": {"ca.crt": self.pem().decode("ascii")}}
            return read(kind, name)

        return reading


def cluster_catalog_spec(
    obj: Mapping[str, Any], *, ca_config_map: str = "", catalogd_ca: bool = False
) -> ForeignSpec | None:
    """The HTTP source of a catalogd ``ClusterCatalog``, or None until it serves; catalogd's
    https certificate is checked against ``ca_config_map`` (key ``ca.crt``) when given, else
    against the CA of ``--catalogd-ca`` (``catalogd_ca``: :class:`CatalogdCA`). A plain http URL
    needs no CA."""
    status = obj.get("status") or {}
    base = str((status.get("urls") or {}).get("base") or "")
    if not base:
        return None
    http: dict[str, Any] = {"url": base}
    if ca_config_map:
        http["caConfigMap"] = {"name": ca_config_map}
    elif catalogd_ca and base.startswith("https://"):
        http["caConfigMap"] = {"name": CATALOGD_CA}
    return ForeignSpec(
        {"type": "http", "http": http},
        int((obj.get("spec") or {}).get("priority") or 0),
        CLUSTER_CATALOG_SAFETY_POLL,
        json.dumps(status.get("resolvedSource") or {}, sort_keys=True),
    )


@dataclass
class _State:
    poller: Poller
    identity: str
    next_poll: float


@dataclass
class ForeignCatalogReconciler:
    """Polls one foreign kind into ``cache`` under ``<Kind>/<key>``; never writes to it."""

    kube: Kube
    cache: CatalogCache
    resource: Resource
    spec_of: SpecOf
    settings: SourceSettings
    validate: bool = True
    read: ObjectReader = field(default=lambda _kind, _name: None)
    """Reads the ConfigMaps and Secrets a source spec names (e.g. a CA for catalogd)."""
    clock: Callable[[], float] = time.monotonic
    _states: dict[str, _State] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def cache_name(self, key: str) -> str:
        """The cache name of the object with informer key ``key``."""
        return f"{self.resource.kind}/{key}"

    def reconcile(self, key: str) -> Result | None:
        """Poll the object's catalog when due; say when to look again."""
        namespace, name = split_key(key)
        cache_name = self.cache_name(key)
        try:
            obj = self.kube.get(self.resource, name, namespace or None)
        except NotFound:
            obj = None
        spec = self.spec_of(obj) if obj is not None else None
        if spec is None:
            with self._lock:
                self._states.pop(key, None)
            if self.cache.remove(cache_name):
                log.info("%s: gone or not serving; removed from the cache", cache_name)
            if self.settings.registries is not None:
                self.settings.registries.catalog_secrets.forget(cache_name)
            return None
        try:
            built = build_source(
                cache_name.replace("/", "-"), spec.source, self.read, self.settings
            )
        except CatalogProblem as exc:
            log.warning("%s: cannot be read: %s", cache_name, exc)
            return Result(requeue_after=retry_delay(1, spec.interval, first=60.0))
        now = self.clock()
        with self._lock:
            state = self._states.get(key)
        if (
            state is not None
            and state.poller.built.key == built.key
            and state.identity == spec.identity
            and now < state.next_poll
        ):
            self.cache.set_priority(cache_name, spec.priority)
            self._record_secrets(cache_name, spec)  # spec.secrets may have changed alone
            return Result(requeue_after=state.next_poll - now)
        if state is None or state.poller.built.key != built.key:
            state = _State(Poller(cache_name, built, validate=self.validate), spec.identity, now)
            with self._lock:
                self._states[key] = state
        state.identity = spec.identity
        outcome = state.poller.poll(self.cache, spec.priority)
        self._record_secrets(cache_name, spec)
        if outcome.problem is not None:
            log.warning(
                "%s: %s%s",
                cache_name,
                outcome.problem,
                "; keeping the last good content" if outcome.entry is not None else "",
            )
        delay = retry_delay(state.poller.failures, spec.interval)
        state.next_poll = self.clock() + delay
        return Result(requeue_after=delay)

    def _record_secrets(self, cache_name: str, spec: ForeignSpec) -> None:
        """Offer the catalog's pull secrets for the bundle images it names (as OLM v0 does)."""
        registries, cached = self.settings.registries, self.cache.get(cache_name)
        if registries is None or cached is None:
            return
        registries.catalog_secrets.record(
            cache_name, cached.digest, spec.pull_secrets, (b.image for b in cached.catalog.bundles)
        )
