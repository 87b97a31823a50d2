"""Is the cluster ready for pivoter, and is pivoter working on it: ``pivoter check [--pre]``.

Before an install (``--pre``): the API server's version, every right the user needs to install
(:mod:`.rights`), the admission API, and webhooks of others that would be called for pivoter's
objects (catalogd's mutating webhook on ClusterCatalogs refuses every one while catalogd is
down, docs/olm-v1.md). After: the CRDs established, the Deployment rolled out at the CLI's
version (a skew is a warning), the webhook certificate made, a leader holding a fresh Lease, the
admission webhook answering (a server-side dry run that only the webhook refuses), every
catalog served, and the verification policy usable (or off).

Each finding is typed (``ok``, ``warning``, ``failed``) and carries a message a person can act on.
"""

from __future__ import annotations

import datetime
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pivoter.apis.resources import BUNDLES, CATALOGS, CLUSTER_CATALOGS, CRDS, LEASES, SECRETS
from pivoter.install.installer import DEPLOYMENTS, JOBS, installed_version
from pivoter.install.manifests import LABEL_VERSION, Manifests
from pivoter.install.rights import SELF_REVIEWS, missing_rights
from pivoter.kube import Forbidden, Kube, KubeError, NotFound, Resource, Unavailable
from pivoter.registries.verification import CONFIG_MAP, VerificationPolicyProvider
from pivoter.webhook.registration import NAME as WEBHOOK_CONFIGURATION
from provisioners.verification import VerificationPolicyError

__all__ = ["MINIMUM_KUBERNETES", "CheckFinding", "after_install", "before_install", "verification"]

MINIMUM_KUBERNETES = (1, 29)
"""The oldest Kubernetes pivoter's CRDs and webhook are meant for (tested on 1.36)."""

Status = Literal["ok", "warning", "failed"]
VALIDATING = Resource(
    "admissionregistration.k8s.io/v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    False,
)
MUTATING = Resource(
    "admissionregistration.k8s.io/v1",
    "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations",
    False,
)
PIVOTER_GROUPS = frozenset(
    {"core.rukpak.io", "pivoter.io", "platform.openshift.io", "olm.operatorframework.io"}
)


@dataclass(frozen=True)
class CheckFinding:
    """One check and its outcome."""

    check: str
    status: Status
    message: str


def _server_version(kube: Kube) -> CheckFinding:
    info = kube.request("GET", "/version")
    text = str(info.get("gitVersion") or "")
    match = re.match(r"v?(\d+)\.(\d+)", text)
    if not match:
        return CheckFinding(
            "kubernetes", "warning", f"the API server's version {text!r} is unknown"
        )
    found = (int(match[1]), int(match[2]))
    want = ".".join(map(str, MINIMUM_KUBERNETES))
    if found < MINIMUM_KUBERNETES:
        return CheckFinding(
            "kubernetes", "failed", f"Kubernetes {text}: pivoter needs {want} or newer"
        )
    return CheckFinding("kubernetes", "ok", f"Kubernetes {text} (>= {want})")


def _foreign_webhooks(kube: Kube) -> Iterable[CheckFinding]:
    for resource in (VALIDATING, MUTATING):
        items, _ = kube.list(resource)
        for configuration in items:
            name = configuration["metadata"]["name"]
            if name == WEBHOOK_CONFIGURATION:
                continue
            for webhook in configuration.get("webhooks") or []:
                groups = {
                    str(g)
                    for rule in webhook.get("rules") or []
                    for g in rule.get("apiGroups") or []
                }
                touched = sorted(groups & PIVOTER_GROUPS) or (
                    ["every group"] if "*" in groups else []
                )
                if not touched or webhook.get("failurePolicy", "Fail") != "Fail":
                    continue
                yield CheckFinding(
                    "webhooks",
                    "warning",
                    f"{resource.kind} {name} (webhook {webhook.get('name')}, failurePolicy Fail) "
                    f"is called for {', '.join(touched)}: while its server is down, the API server "
                    "refuses those objects (catalogd's: docs/olm-v1.md, 'Side by side')",
                )


def before_install(kube: Kube, manifests: Manifests, cli_version: str) -> list[CheckFinding]:
    """What must hold before ``pivoter install`` (``pivoter check --pre``)."""
    findings = [_server_version(kube)]
    missing = missing_rights(kube, manifests.all())
    if missing:
        listed = "; ".join(map(str, missing[:20]))
        more = f" and {len(missing) - 20} more" if len(missing) > 20 else ""
        findings.append(
            CheckFinding("rights", "failed", f"you may not install pivoter: missing {listed}{more}")
        )
    else:
        findings.append(
            CheckFinding("rights", "ok", f"you may apply all {len(manifests.all())} objects")
        )
    try:
        kube.resource(VALIDATING.api_version, VALIDATING.kind)
        findings.append(
            CheckFinding("admission", "ok", "admissionregistration.k8s.io/v1 is served")
        )
    except NotFound:
        findings.append(
            CheckFinding("admission", "failed", "admissionregistration.k8s.io/v1 is not served")
        )
    try:
        findings.extend(_foreign_webhooks(kube))
    except Forbidden as exc:
        findings.append(
            CheckFinding("webhooks", "warning", f"cannot list webhook configurations: {exc}")
        )
    try:
        installed = installed_version(kube, manifests)
    except Forbidden as exc:
        findings.append(
            CheckFinding("installed", "warning", f"cannot tell what is installed: {exc}")
        )
        installed = None
    if installed is not None:
        findings.append(
            CheckFinding(
                "installed",
                "ok",
                f"pivoter {installed} is installed; `pivoter install` upgrades it to {cli_version}",
            )
        )
    return findings


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _crds(kube: Kube, manifests: Manifests) -> CheckFinding:
    problems = []
    for crd in manifests.crds:
        name = crd["metadata"]["name"]
        try:
            live = kube.get(CRDS, name)
        except NotFound:
            problems.append(f"{name} is missing")
            continue
        established = _condition(live, "Established")
        if not established or established.get("status") != "True":
            problems.append(f"{name} is not established")
    if problems:
        return CheckFinding("crds", "failed", "; ".join(problems) + " (run `pivoter install`)")
    return CheckFinding("crds", "ok", f"{len(manifests.crds)} CRDs established")


def _deployment(
    kube: Kube, manifests: Manifests, cli_version: str
) -> tuple[list[CheckFinding], bool]:
    """The daemon's findings, and whether its Deployment exists."""
    findings = []
    for obj in manifests.components:
        if obj.get("kind") != "Deployment":
            continue
        meta = obj["metadata"]
        try:
            live = kube.get(DEPLOYMENTS, meta["name"], meta["namespace"])
        except NotFound:
            missing = CheckFinding(
                "daemon",
                "failed",
                f"Deployment {meta['namespace']}/{meta['name']} is missing: pivoter is not "
                "installed (`pivoter install`)",
            )
            return [missing], False
        want = int((live.get("spec") or {}).get("replicas", 1))
        status = live.get("status") or {}
        ready = int(status.get("readyReplicas") or 0)
        updated = int(status.get("updatedReplicas") or 0)
        where = f"Deployment {meta['namespace']}/{meta['name']}"
        if ready < want or updated < want:
            findings.append(
                CheckFinding(
                    "daemon",
                    "failed",
                    f"{where}: {ready}/{want} ready, {updated}/{want} updated (kubectl -n "
                    f"{meta['namespace']} describe pods -l app.kubernetes.io/name=pivoter)",
                )
            )
        else:
            findings.append(CheckFinding("daemon", "ok", f"{where}: {ready}/{want} ready"))
        running = str(((live.get("metadata") or {}).get("labels") or {}).get(LABEL_VERSION) or "")
        expected = str(obj["metadata"]["labels"][LABEL_VERSION])
        if running != expected:
            findings.append(
                CheckFinding(
                    "version",
                    "warning",
                    f"the daemon is pivoter {running or 'of an unknown version'}, this command "
                    f"is {cli_version}: `pivoter install` with this command upgrades it, or use "
                    "the command of the daemon's version",
                )
            )
        else:
            findings.append(CheckFinding("version", "ok", f"daemon and command are {cli_version}"))
    return findings, True


def _certificate(kube: Kube, manifests: Manifests) -> CheckFinding:
    for obj in manifests.components:
        if obj.get("kind") == "Job":
            meta = obj["metadata"]
            try:
                job = kube.get(JOBS, meta["name"], meta["namespace"])
            except NotFound:
                job = {}
            if int((job.get("status") or {}).get("succeeded") or 0) > 0:
                return CheckFinding("certificate", "ok", "the webhook certificate was made")
            try:
                kube.get(SECRETS, "pivoter-webhook-cert", meta["namespace"])
                return CheckFinding("certificate", "ok", "the webhook certificate Secret exists")
            except NotFound:
                return CheckFinding(
                    "certificate",
                    "failed",
                    f"no webhook certificate yet: the Job {meta['namespace']}/{meta['name']} has "
                    "not succeeded (kubectl logs job/...)",
                )
    return CheckFinding("certificate", "warning", "the manifests make no webhook certificate")


def _leader_election(manifests: Manifests) -> tuple[str, str] | None:
    for obj in manifests.components:
        if obj.get("kind") != "Deployment":
            continue
        for container in obj["spec"]["template"]["spec"].get("containers") or []:
            for arg in container.get("args") or []:
                if str(arg).startswith("--leader-election-id="):
                    return obj["metadata"]["namespace"], str(arg).split("=", 1)[1]
    return None


def _leader(kube: Kube, manifests: Manifests) -> CheckFinding:
    election = _leader_election(manifests)
    if election is None:
        return CheckFinding("leader", "ok", "leader election is off")
    namespace, name = election
    try:
        lease = kube.get(LEASES, name, namespace)
    except NotFound:
        return CheckFinding(
            "leader", "failed", f"no Lease {namespace}/{name}: no replica leads yet"
        )
    spec = lease.get("spec") or {}
    holder = str(spec.get("holderIdentity") or "")
    renewed = str(spec.get("renewTime") or "")
    duration = int(spec.get("leaseDurationSeconds") or 15)
    if not holder or not renewed:
        return CheckFinding("leader", "failed", f"Lease {namespace}/{name} has no holder")
    when = datetime.datetime.fromisoformat(renewed.replace("Z", "+00:00"))
    age = (datetime.datetime.now(datetime.UTC) - when).total_seconds()
    if age > 2 * duration:
        return CheckFinding(
            "leader",
            "failed",
            f"Lease {namespace}/{name}: {holder} last renewed {age:.0f} s ago (the leader is gone "
            "and no replica took over)",
        )
    return CheckFinding("leader", "ok", f"{holder} leads (renewed {age:.0f} s ago)")


def _webhook(kube: Kube) -> CheckFinding:
    try:
        configuration = kube.get(VALIDATING, WEBHOOK_CONFIGURATION)
    except NotFound:
        return CheckFinding(
            "webhook", "failed", f"{WEBHOOK_CONFIGURATION} is not registered (the leader does)"
        )
    if not all(
        (w.get("clientConfig") or {}).get("caBundle") for w in configuration.get("webhooks") or []
    ):
        return CheckFinding("webhook", "failed", f"{WEBHOOK_CONFIGURATION} has no CA bundle")
    review = kube.create(
        SELF_REVIEWS,
        {
            "apiVersion": SELF_REVIEWS.api_version,
            "kind": SELF_REVIEWS.kind,
            "spec": {
                "resourceAttributes": {
                    "verb": "create",
                    "group": "core.rukpak.io",
                    "resource": "bundles",
                }
            },
        },
    )
    if not (review.get("status") or {}).get("allowed"):
        return CheckFinding(
            "webhook", "warning", "not asked: you may not create Bundles, which the check dry-runs"
        )
    # A Bundle whose ConfigMap does not exist passes the schema; only the webhook refuses it.
    name = f"pivoter-check-{uuid.uuid4().hex[:8]}"
    probe = {
        "apiVersion": BUNDLES.api_version,
        "kind": "Bundle",
        "metadata": {"name": name},
        "spec": {
            "provisionerClassName": "core-rukpak-io-plain",
            "source": {"type": "configMaps", "configMaps": [{"configMap": {"name": name}}]},
        },
    }
    try:
        kube.request("POST", BUNDLES.path(None), query=[("dryRun", "All")], body=probe)
    except Unavailable as exc:
        return CheckFinding("webhook", "failed", f"the API server cannot reach the webhook: {exc}")
    except (Forbidden, KubeError):
        return CheckFinding("webhook", "ok", "the webhook answers (it refused a dry-run Bundle)")
    return CheckFinding(
        "webhook",
        "failed",
        "a dry-run Bundle naming a missing ConfigMap was admitted: the webhook is not called",
    )


def _catalogs(kube: Kube) -> list[CheckFinding]:
    findings = []
    for resource, condition_type in ((CATALOGS, "Serving"), (CLUSTER_CATALOGS, "Serving")):
        try:
            items, _ = kube.list(resource)
        except NotFound:
            continue
        bad = []
        for item in items:
            meta = item["metadata"]
            where = f"{meta.get('namespace') + '/' if meta.get('namespace') else ''}{meta['name']}"
            condition = _condition(item, condition_type)
            if not condition or condition.get("status") != "True":
                reason = (condition or {}).get("message") or "not served yet"
                bad.append(f"{resource.kind} {where}: {reason}")
        if bad:
            findings.append(CheckFinding("catalogs", "failed", "; ".join(bad)))
        elif items:
            findings.append(CheckFinding("catalogs", "ok", f"{len(items)} {resource.kind}s served"))
    return findings


def after_install(kube: Kube, manifests: Manifests, cli_version: str) -> list[CheckFinding]:
    """What must hold once pivoter is installed (``pivoter check``)."""
    findings = [_server_version(kube), _crds(kube, manifests)]
    daemon, installed = _deployment(kube, manifests, cli_version)
    findings += daemon
    if not installed:
        return findings
    findings += [_certificate(kube, manifests), _leader(kube, manifests), _webhook(kube)]
    findings += _catalogs(kube)
    namespace = next(
        (o["metadata"]["namespace"] for o in manifests.components if o.get("kind") == "Deployment"),
        "",
    )
    findings.append(verification(kube, namespace))
    return findings


def verification(kube: Kube, namespace: str) -> CheckFinding:
    """The cluster's verification policy in pivoter's ``namespace`` (docs/verification.md): off,
    or in force and usable. A policy that cannot be used fails every pull, so it fails the check
    too."""
    try:
        policy = VerificationPolicyProvider(kube, namespace).policy()
    except VerificationPolicyError as exc:
        return CheckFinding("verification", "failed", f"every pull fails: {exc}")
    except Forbidden as exc:
        return CheckFinding("verification", "warning", f"cannot read the policy: {exc}")
    if policy is None:
        return CheckFinding(
            "verification", "ok", f"off: no ConfigMap {namespace}/{CONFIG_MAP} (nothing verified)"
        )
    return CheckFinding("verification", "ok", f"{policy.mode.value}: {policy.name}")
