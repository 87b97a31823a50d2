"""Whether this daemon serves OLM v1's APIs (``pivoter run --olmv1``): decided at start, and for
``auto`` decided again while it reads, until it serves.

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

``auto`` that reads with both CRDs installed may serve later, the day OLM v1 is stopped (the
migration of docs/olm-v1.md): :class:`AutoMode` decides again every :data:`RECHECK_INTERVAL`
seconds, and right after the OLM Lease that held it back expires, and calls its ``on_serve`` once
when the answer flips to serve. It never flips back: a daemon that serves keeps serving until it
restarts (OLM v1 started again next to it is :mod:`pivoter.olmv1.leftovers`' finding).

Called by :mod:`pivoter.daemon`; pure apart from those reads.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pivoter.apis import olmv1
from pivoter.apis.resources import CRDS, LEASES
from pivoter.kube import Forbidden, Kube, KubeError, NotFound, Object

__all__ = [
    "OLM_LEASES",
    "RECHECK_INTERVAL",
    "AutoMode",
    "Mode",
    "ModeDecision",
    "OlmV1Error",
    "decide",
    "next_check",
]

log = logging.getLogger(__name__)

OLM_LEASES = ("catalogd-operator-lock", "9c4404e7.operatorframework.io")
"""The leader-election Leases of catalogd and operator-controller (their ``main.go``)."""
CRD_NAMES = (f"clusterextensions.{olmv1.GROUP}", f"clustercatalogs.{olmv1.GROUP}")
RECHECK_INTERVAL = 30.0
"""Seconds between two decisions of ``auto`` while it reads (sooner when a Lease expires)."""
LEASE_MARGIN = 1.0
"""Seconds after an OLM Lease's expiry before deciding again (clocks are not exact)."""

Clock = Callable[[], dt.datetime]


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
    crds_installed: bool = True
    """False when a CRD was found missing (``read`` does not look): with both installed the
    controllers can be registered at start, to serve later."""
    held_until: dt.datetime | None = None
    """When the fresh OLM Lease that keeps ``auto`` from serving expires unless renewed (the
    latest of them); None when no Lease is the reason."""


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
        return ModeDecision(
            False, f"the CRD {', '.join(missing)} is not installed", crds_installed=False
        )
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
    holder, until = _olm_lease_holder(kube, clock or _now)
    if holder:
        return ModeDecision(False, f"{holder}: OLM v1 runs on this cluster", held_until=until)
    return ModeDecision(True, "pivoter's OLM v1 CRDs are installed and no OLM v1 controller runs")


def _crd(kube: Kube, name: str) -> Object | None:
    try:
        return kube.get(CRDS, name)
    except NotFound:
        return None


def next_check(
    decision: ModeDecision, now: dt.datetime, interval: float = RECHECK_INTERVAL
) -> float:
    """Seconds until ``auto`` decides again after ``decision``: ``interval``, or just after the
    Lease that held it back expires when that comes first."""
    if decision.held_until is None:
        return interval
    expires = (decision.held_until - now).total_seconds() + LEASE_MARGIN
    return max(min(interval, expires), LEASE_MARGIN)


class AutoMode:
    """``--olmv1=auto`` decided again in a background thread until it serves; then
    ``on_serve(decision)`` is called once (from that thread) and the thread ends."""

    def __init__(
        self,
        kube: Kube,
        on_serve: Callable[[ModeDecision], None],
        *,
        first: ModeDecision,
        interval: float = RECHECK_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        self.kube = kube
        self.on_serve = on_serve
        self.interval = interval
        self.clock = clock or _now
        self.decision = first
        """The latest decision (``first``: the one taken at start)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> ModeDecision:
        """Decide once; on serve, call ``on_serve``. Returns the decision."""
        decision = decide(self.kube, Mode.AUTO, clock=self.clock)
        before, self.decision = self.decision, decision
        if decision.serve:
            self.on_serve(decision)
        elif decision.reason != before.reason:
            log.info("OLM v1 APIs: still not served (%s)", decision.reason)
        return decision

    def start(self) -> None:
        """Decide in the background from now on."""
        self._thread = threading.Thread(target=self._run, name="olmv1-auto", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop deciding (a decision in flight finishes). Safe to call again."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(next_check(self.decision, self.clock(), self.interval)):
            try:
                if self.check().serve:
                    return
            except KubeError as exc:  # the API server is away: ask again next time
                log.warning("OLM v1 APIs: cannot decide again (%s); still not served", exc)
            except Exception:  # the thread must outlive one bad pass
                log.exception("OLM v1 APIs: deciding again failed; still not served")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _olm_lease_holder(kube: Kube, clock: Clock) -> tuple[str, dt.datetime | None]:
    """``Lease NS/NAME is held by HOLDER`` for a fresh OLM leader Lease and when the latest fresh
    one expires, else ("", None)."""
    try:
        leases, _ = kube.list(LEASES)
    except (Forbidden, KubeError) as exc:
        log.warning("cannot list Leases to look for OLM v1's controllers (%s); assuming none", exc)
        return "", None
    now = clock()
    held, until = "", None
    for lease in leases:
        metadata = lease.get("metadata") or {}
        if metadata.get("name") not in OLM_LEASES:
            continue
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        renewed = _time(str(spec.get("renewTime") or ""))
        duration = float(spec.get("leaseDurationSeconds") or 0)
        if holder and renewed is not None and (now - renewed).total_seconds() <= duration:
            expires = renewed + dt.timedelta(seconds=duration)
            if until is None or expires > until:
                name = f"{metadata.get('namespace')}/{metadata.get('name')}"
                held, until = f"Lease {name} is held by {holder}", expires
    return held, until


def _time(text: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
