"""What OLM v1 left on a cluster whose OLM v1 APIs pivoter serves, each with what to do about it.

Scaling catalogd and operator-controller to 0 (the migration of docs/olm-v1.md) stops their
controllers but leaves their admission webhooks registered: catalogd's
``catalogd-mutating-webhook-configuration`` (webhook
``inject-metadata-name.olm.operatorframework.io``, ``failurePolicy: Fail``, Service
``catalogd-service`` in ``olmv1-system``) then makes the API server refuse every ClusterCatalog
created or updated, with nobody to answer. :func:`findings` looks at
the cluster and returns a :class:`LeftoverFinding` for

* every Mutating or ValidatingWebhookConfiguration (but pivoter's own) with a webhook whose rules
  name ClusterCatalogs or ClusterExtensions of ``olm.operatorframework.io`` and whose Service is
  gone or has no ready endpoint (found by what it intercepts, not by name: OpenShift's and the
  Helm chart's names differ);
* OLM v1's Deployments (``catalogd-controller-manager``, ``operator-controller-controller-manager``,
  in any namespace) still running, or still installed at 0 replicas;
* a kind it was not allowed to read (the check is then incomplete).

Each finding's :attr:`LeftoverFinding.message` says what breaks and ends with the command that
fixes it (:attr:`LeftoverFinding.remedy`). Called by the daemon when it serves OLM v1's APIs
(:class:`LeftoverMonitor`: an ERROR or WARNING log line and a Warning Event on the object, when a
finding appears) and by the CLI's checks (``pivoter adopt --check``).
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pivoter.apis import olmv1
from pivoter.kube import EventRecorder, Forbidden, Kube, KubeError, NotFound, Object, Resource
from pivoter.webhook.registration import NAME as PIVOTER_WEBHOOKS

__all__ = [
    "CHECK_INTERVAL",
    "OLM_DEPLOYMENTS",
    "LeftoverFinding",
    "LeftoverMonitor",
    "LeftoverProblem",
    "findings",
]

log = logging.getLogger(__name__)

ADMISSION = "admissionregistration.k8s.io/v1"
MUTATING_WEBHOOKS = Resource(
    ADMISSION, "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", False
)
VALIDATING_WEBHOOKS = Resource(
    ADMISSION, "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", False
)
SERVICES = Resource("v1", "Service", "services", True)
ENDPOINT_SLICES = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices", True)
DEPLOYMENTS = Resource("apps/v1", "Deployment", "deployments", True)

OLM_DEPLOYMENTS: Mapping[str, str] = {
    "catalogd-controller-manager": "catalogd",
    "operator-controller-controller-manager": "operator-controller",
}
"""OLM v1's Deployments (its manifests and Helm chart) and the controller each runs."""
OLM_RESOURCES = ("clustercatalogs", "clusterextensions")
CHECK_INTERVAL = 300.0
"""Seconds between two checks of the daemon while it serves OLM v1's APIs."""
EVENT_REASON = "OlmV1Leftover"


class LeftoverProblem(enum.Enum):
    """What a :class:`LeftoverFinding` is about."""

    WEBHOOK_SERVICE_MISSING = "WebhookServiceMissing"
    """A webhook's Service does not exist."""
    WEBHOOK_NOT_READY = "WebhookNotReady"
    """A webhook's Service exists but no endpoint behind it is ready."""
    DEPLOYMENT_RUNNING = "DeploymentRunning"
    """catalogd or operator-controller still runs (replicas above 0)."""
    DEPLOYMENT_PRESENT = "DeploymentPresent"
    """catalogd or operator-controller is scaled to 0 but still installed."""
    NOT_CHECKED = "NotChecked"
    """A kind pivoter may not read; what it would have found is unknown."""


@dataclass(frozen=True, slots=True)
class LeftoverFinding:
    """One thing OLM v1 left behind."""

    problem: LeftoverProblem
    kind: str
    """The object's kind (``MutatingWebhookConfiguration``, ``Deployment``...), or the kind that
    could not be read (:attr:`LeftoverProblem.NOT_CHECKED`)."""
    name: str
    namespace: str
    """"" for a cluster-scoped object."""
    message: str
    """What breaks and the command that fixes it, for a person."""
    remedy: str
    """The command alone (``kubectl ...``)."""
    blocks: bool = False
    """Writes of OLM v1's objects are refused until it is fixed (a dead webhook with
    ``failurePolicy: Fail``)."""
    resources: tuple[str, ...] = ()
    """The OLM v1 resources a webhook intercepts."""
    api_version: str = ""
    uid: str = ""

    def regarding(self) -> Object | None:
        """The object an Event about this finding regards (None: no object)."""
        if not self.name or not self.api_version:
            return None
        metadata: dict[str, Any] = {"name": self.name}
        if self.namespace:
            metadata["namespace"] = self.namespace
        if self.uid:
            metadata["uid"] = self.uid
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": metadata}


def findings(kube: Kube) -> list[LeftoverFinding]:
    """Everything of OLM v1 still on the cluster that gets in pivoter's way (see the module
    docstring); blocking findings first. Reads only; a kind it may not read is a
    :attr:`LeftoverProblem.NOT_CHECKED` finding, an API server that does not answer raises
    :class:`~pivoter.kube.KubeError`."""
    found: list[LeftoverFinding] = []
    for resource in (MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS):
        found += _webhooks(kube, resource)
    found += _deployments(kube)
    return sorted(found, key=lambda f: (not f.blocks, f.problem.value, f.namespace, f.name))


def _webhooks(kube: Kube, resource: Resource) -> list[LeftoverFinding]:
    try:
        configurations, _ = kube.list(resource)
    except Forbidden:
        return [_not_checked(resource)]
    except NotFound:
        return []
    found = []
    for configuration in configurations:
        name = str((configuration.get("metadata") or {}).get("name") or "")
        if name == PIVOTER_WEBHOOKS:
            continue
        for webhook in configuration.get("webhooks") or []:
            finding = _webhook(kube, resource, configuration, webhook)
            if finding is not None:
                found.append(finding)
                break  # one finding per configuration: deleting it fixes every webhook
    return found


def _webhook(
    kube: Kube, resource: Resource, configuration: Object, webhook: Mapping[str, Any]
) -> LeftoverFinding | None:
    intercepted = _intercepted(webhook.get("rules") or [])
    service = ((webhook.get("clientConfig") or {}).get("service")) or {}
    if not intercepted or not service.get("name"):
        return None  # not OLM v1's objects, or a URL this check cannot judge
    namespace, service_name = str(service.get("namespace") or ""), str(service["name"])
    problem = _service_problem(kube, namespace, service_name)
    if problem is None:
        return None
    metadata = configuration.get("metadata") or {}
    name = str(metadata.get("name") or "")
    blocks = str(webhook.get("failurePolicy") or "Fail") == "Fail"
    remedy = f"kubectl delete {resource.kind.lower()} {name}"
    state = (
        "which does not exist"
        if problem is LeftoverProblem.WEBHOOK_SERVICE_MISSING
        else "which has no ready endpoint"
    )
    kinds = " and ".join(intercepted)
    effect = (
        f"the API server refuses every create or update of {kinds} (failurePolicy Fail)"
        if blocks
        else f"every create or update of {kinds} calls it in vain (failurePolicy Ignore)"
    )
    message = (
        f"{resource.kind} {name} (webhook {webhook.get('name')}) calls Service "
        f"{namespace}/{service_name}, {state}: {effect}. OLM v1 left it behind; pivoter needs no "
        f"such webhook. Delete it: {remedy}"
    )
    return LeftoverFinding(
        problem,
        resource.kind,
        name,
        "",
        message,
        remedy,
        blocks=blocks,
        resources=intercepted,
        api_version=resource.api_version,
        uid=str(metadata.get("uid") or ""),
    )


def _intercepted(rules: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The OLM v1 resources the rules name (explicitly in OLM v1's group; a ``*`` resource of
    that group counts as both)."""
    named: set[str] = set()
    for rule in rules:
        if olmv1.GROUP not in (rule.get("apiGroups") or []):
            continue
        for item in rule.get("resources") or []:
            base = str(item).partition("/")[0]
            named.update(OLM_RESOURCES if base == "*" else (base,) if base in OLM_RESOURCES else ())
    return tuple(r for r in OLM_RESOURCES if r in named)


def _service_problem(kube: Kube, namespace: str, name: str) -> LeftoverProblem | None:
    try:
        service = kube.get(SERVICES, name, namespace)
    except NotFound:
        return LeftoverProblem.WEBHOOK_SERVICE_MISSING
    except Forbidden:
        log.warning("cannot read Service %s/%s to check a webhook; skipped", namespace, name)
        return None
    if (service.get("spec") or {}).get("type") == "ExternalName":
        return None  # no endpoints to count
    try:
        slices, _ = kube.list(
            ENDPOINT_SLICES, namespace, label_selector=f"kubernetes.io/service-name={name}"
        )
    except (Forbidden, NotFound):
        log.warning("cannot list EndpointSlices of Service %s/%s; skipped", namespace, name)
        return None
    return None if _any_ready(slices) else LeftoverProblem.WEBHOOK_NOT_READY


def _any_ready(slices: Sequence[Mapping[str, Any]]) -> bool:
    """Whether an endpoint of the slices is ready (no ``ready`` condition counts as ready)."""
    return any(
        (endpoint.get("conditions") or {}).get("ready") is not False
        for piece in slices
        for endpoint in piece.get("endpoints") or []
    )


def _deployments(kube: Kube) -> list[LeftoverFinding]:
    found = []
    for name, controller in OLM_DEPLOYMENTS.items():
        try:
            deployments, _ = kube.list(DEPLOYMENTS, field_selector=f"metadata.name={name}")
        except Forbidden:
            return [_not_checked(DEPLOYMENTS)]
        for deployment in deployments:
            found.append(_deployment(deployment, controller))
    return found


def _deployment(deployment: Object, controller: str) -> LeftoverFinding:
    metadata = deployment.get("metadata") or {}
    name, namespace = str(metadata.get("name") or ""), str(metadata.get("namespace") or "")
    replicas = (deployment.get("spec") or {}).get("replicas")
    replicas = 1 if replicas is None else int(replicas)
    where = f"Deployment {namespace}/{name} ({controller})"
    if replicas > 0:
        remedy = f"kubectl -n {namespace} scale deployment {name} --replicas=0"
        problem = LeftoverProblem.DEPLOYMENT_RUNNING
        message = (
            f"{where} runs {replicas} replica(s): OLM v1 and pivoter both reconcile OLM v1's "
            f"objects. Stop it: {remedy}"
        )
    else:
        remedy = f"kubectl -n {namespace} delete deployment {name}"
        problem = LeftoverProblem.DEPLOYMENT_PRESENT
        message = (
            f"{where} is scaled to 0 but still installed. Once every ClusterExtension is "
            f"Installed=True under pivoter, delete it (and its webhook configurations): {remedy}"
        )
    return LeftoverFinding(
        problem,
        "Deployment",
        name,
        namespace,
        message,
        remedy,
        api_version=DEPLOYMENTS.api_version,
        uid=str(metadata.get("uid") or ""),
    )


def _not_checked(resource: Resource) -> LeftoverFinding:
    remedy = f"kubectl auth can-i list {resource.plural}.{resource.api_version.rpartition('/')[0]}"
    return LeftoverFinding(
        LeftoverProblem.NOT_CHECKED,
        resource.kind,
        "",
        "",
        f"pivoter may not list {resource.kind}s: what OLM v1 left of them is unknown. Grant "
        f"list on {resource.plural} and check again (as pivoter: {remedy.rstrip('.')})",
        remedy.rstrip("."),
    )


class LeftoverMonitor:
    """The daemon's check while it serves OLM v1's APIs: :func:`findings` now and every
    :data:`CHECK_INTERVAL` seconds; a finding that appears is logged (ERROR when it blocks,
    WARNING otherwise) and recorded as a Warning Event on its object, one that goes away is
    logged once. :attr:`latest` holds the last findings. ``active``: the background checks are
    skipped while it says False (a replica that does not lead)."""

    def __init__(
        self,
        kube: Kube,
        recorder: EventRecorder | None = None,
        interval: float = CHECK_INTERVAL,
        *,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        self.kube = kube
        self.recorder = recorder
        self.interval = interval
        self.active = active
        self.latest: list[LeftoverFinding] = []
        self._stop = threading.Event()

    def check(self) -> list[LeftoverFinding]:
        """One check; returns (and keeps) the findings."""
        found = findings(self.kube)
        before = {(f.problem, f.kind, f.namespace, f.name) for f in self.latest}
        now = {(f.problem, f.kind, f.namespace, f.name) for f in found}
        for finding in found:
            if (finding.problem, finding.kind, finding.namespace, finding.name) in before:
                continue
            level = logging.ERROR if finding.blocks else logging.WARNING
            log.log(level, "OLM v1 leftover: %s", finding.message)
            regarding = finding.regarding()
            if self.recorder is not None and regarding is not None:
                self.recorder.warning(regarding, EVENT_REASON, "Check", finding.message)
        for gone in self.latest:
            if (gone.problem, gone.kind, gone.namespace, gone.name) not in now:
                log.info("OLM v1 leftover resolved: %s %s", gone.kind, gone.name)
        self.latest = found
        return found

    def start(self) -> None:
        """Check now and then every ``interval`` seconds in a background thread."""
        threading.Thread(target=self._run, name="olmv1-leftovers", daemon=True).start()

    def stop(self) -> None:
        """Stop checking. Safe to call again."""
        self._stop.set()

    def _run(self) -> None:
        while True:
            try:
                if self.active():
                    self.check()
            except KubeError as exc:
                log.warning("cannot check what OLM v1 left behind: %s", exc)
            except Exception:  # the thread must outlive one bad pass
                log.exception("checking what OLM v1 left behind failed")
            if self._stop.wait(self.interval):
                return
