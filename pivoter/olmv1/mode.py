"""Whether this daemon serves OLM v1's APIs (``pivoter run --olmv1``), decided once at start.

``serve``: pivoter runs the ClusterCatalog and ClusterExtension controllers and writes their
status. ``read``: as before this package existed, ClusterCatalogs are only read (over the HTTP
URL another controller publishes) into the catalog cache and ClusterExtensions are left alone.
``auto`` (the default) serves only when nobody else does, which it decides from what is on the
cluster, in this order:

1. both CRDs (``clusterextensions`` and ``clustercatalogs.olm.operatorframework.io``) must be
   installed, else ``read``;
2. both must be pivoter's copies: they carry the ``pivoter.io/crd-source`` annotation, which
   operator-controller's manifests and Helm chart do not (applying OLM's manifests over ours
   removes it), else ``read``;
3. no leader-election Lease of catalogd (``catalogd-operator-lock``) or operator-controller
   (``9c4404e7.operatorframework.io``) may be held and fresh anywhere on the cluster, else
   ``read`` (a Lease list pivoter may not read is reported and skipped).

Called by :mod:`pivoter.daemon`; pure apart from those reads.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass

from pivoter.apis import olmv1
from pivoter.apis.resources import CRDS, LEASES
from pivoter.kube import Forbidden, Kube, KubeError, NotFound, Object

__all__ = ["OLM_LEASES", "Mode", "ModeDecision", "OlmV1Error", "decide"]

log = logging.getLogger(__name__)

OLM_LEASES = ("catalogd-operator-lock", "9c4404e7.operatorframework.io")
"""The leader-election Leases of catalogd and operator-controller (their ``main.go``)."""
CRD_NAMES = (f"clusterextensions.{olmv1.GROUP}", f"clustercatalogs.{olmv1.GROUP}")


class Mode(enum.Enum):
    """What ``--olmv1`` asks for."""

    AUTO = "auto"
    SERVE = "serve"
    READ = "read"


class OlmV1Error(Exception):
    """``--olmv1=serve`` cannot be honoured; the message says what to install."""


@dataclass(frozen=True, slots=True)
class ModeDecision:
    """The outcome: serve or not, and why (logged at start)."""

    serve: bool
    reason: str


def decide(
    kube: Kube, mode: Mode, *, clock: Callable[[], dt.datetime] | None = None
) -> ModeDecision:
    """Decide whether to serve OLM v1's APIs (see the module docstring)."""
    if mode is Mode.READ:
        return ModeDecision(
            False, "--olmv1=read: ClusterCatalogs are only read, ClusterExtensions ignored"
        )
    crds = {name: _crd(kube, name) for name in CRD_NAMES}
    missing = sorted(name for name, crd in crds.items() if crd is None)
    if mode is Mode.SERVE:
        if missing:
            raise OlmV1Error(
                f"--olmv1=serve: the CRD {', '.join(missing)} is not installed "
                "(kubectl apply -f crds/olmv1/)"
            )
        return ModeDecision(True, "--olmv1=serve")
    if missing:
        return ModeDecision(False, f"the CRD {', '.join(missing)} is not installed")
    foreign = sorted(
        name
        for name, crd in crds.items()
        if olmv1.ANNOTATION_CRD_SOURCE
        not in ((crd or {}).get("metadata") or {}).get("annotations", {})
    )
    if foreign:
        return ModeDecision(
            False,
            f"the CRD {', '.join(foreign)} was not installed from pivoter's crds/olmv1/ (no "
            f"{olmv1.ANNOTATION_CRD_SOURCE} annotation): OLM v1 serves these APIs",
        )
    holder = _olm_lease_holder(kube, clock or (lambda: dt.datetime.now(dt.UTC)))
    if holder:
        return ModeDecision(False, f"{holder}: OLM v1 runs on this cluster")
    return ModeDecision(True, "pivoter's OLM v1 CRDs are installed and no OLM v1 controller runs")


def _crd(kube: Kube, name: str) -> Object | None:
    try:
        return kube.get(CRDS, name)
    except NotFound:
        return None


def _olm_lease_holder(kube: Kube, clock: Callable[[], dt.datetime]) -> str:
    """``Lease NS/NAME is held by HOLDER`` for a fresh OLM leader Lease, else ""."""
    try:
        leases, _ = kube.list(LEASES)
    except (Forbidden, KubeError) as exc:
        log.warning("cannot list Leases to look for OLM v1's controllers (%s); assuming none", exc)
        return ""
    now = clock()
    for lease in leases:
        metadata = lease.get("metadata") or {}
        if metadata.get("name") not in OLM_LEASES:
            continue
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        renewed = _time(str(spec.get("renewTime") or ""))
        duration = float(spec.get("leaseDurationSeconds") or 0)
        if holder and renewed is not None and (now - renewed).total_seconds() <= duration:
            return f"Lease {metadata.get('namespace')}/{metadata.get('name')} is held by {holder}"
    return ""


def _time(text: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
