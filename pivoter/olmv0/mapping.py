"""OLM v0's concepts in pivoter's words: the Resolution that takes over one Subscription.

One Resolution per Subscription, not per namespace: a Subscription is OLM v0's unit of intent
(one package, its own channel, approval and config), while OLM v0's namespace-wide InstallPlan
approval is the pain pivoter removes; packages that depend on each other across Resolutions are
resolved jointly anyway (held bundles, docs/pivot.md). The mapping (docs/migrate-from-olm-v0.md):

=====================================  ======================================================
OLM v0                                 Resolution
=====================================  ======================================================
``spec.name`` (package)                ``spec.packages[0].name``
``spec.channel``                       ``spec.packages[0].channel``
installed CSV's version                ``versionRange`` pinned to it while adopting, then
                                       removed (``startingCSV`` only mattered at install time)
``installPlanApproval``                ``spec.approval`` (Automatic / Manual, per Resolution)
the CSV's ``olm.targetNamespaces``     ``spec.packages[0].config.targetNamespaces``
``spec.config``                        ``spec.packages[0].config.deploymentConfig``
the Subscription's namespace           ``spec.installNamespace``
OperatorGroup ``serviceAccountName``   ``spec.serviceAccount`` (the install identity)
=====================================  ======================================================

Pure functions; called by :mod:`pivoter.olmv0.handover` and ``pivoter adopt``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pivoter.apis import pivoter as pivoter_api
from pivoter.apis.views import ANNOTATION_TAKEOVER, InstalledBundle
from pivoter.olmv0.refusals import DEPLOYMENT_CONFIG_KEYS
from pivoter.olmv0.survey import InstalledOperator, target_namespaces
from provisioners.formats.registry_v1.names import bounded_name
from resolver import safedata

__all__ = [
    "ANNOTATION_ADOPTION",
    "ANNOTATION_CSV",
    "ANNOTATION_DEPENDENCIES",
    "ANNOTATION_SUBSCRIPTION",
    "LABEL_ADOPTED_FROM",
    "package_config",
    "recorded_dependencies",
    "resolution_for",
    "resolution_name",
]

ANNOTATION_SUBSCRIPTION = "olmv0.pivoter.io/subscription"
"""On the Resolution: the adopted Subscription as JSON (namespace, name, spec), kept so that
``pivoter adopt --undo`` can give the operator back to OLM v0."""
ANNOTATION_CSV = "olmv0.pivoter.io/csv"
"""On the Resolution: the CSV that was adopted."""
ANNOTATION_DEPENDENCIES = "olmv0.pivoter.io/dependencies"
"""On the Resolution: the Subscriptions of the dependencies OLM v0 installed for the adopted one,
taken over with it (:mod:`pivoter.olmv0.groups`), as a JSON list of their namespace, name, spec,
CSV and package."""
ANNOTATION_ADOPTION = "olmv0.pivoter.io/adoption"
"""On the Resolution: the step the adoption reached (:mod:`pivoter.olmv0.handover`)."""
LABEL_ADOPTED_FROM = "olmv0.pivoter.io/namespace"
"""On the Resolution: the namespace of the adopted Subscription (to list a namespace's)."""


def resolution_name(namespace: str, subscription: str) -> str:
    """The Resolution adopting ``namespace/subscription`` (deterministic, at most 63
    characters)."""
    return bounded_name("olmv0", namespace, subscription)


def package_config(
    installed: InstalledOperator, object_names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The registry+v1 configuration of the adopted package's BundleDeployment
    (``object_names``: the names OLM v0 gave generated objects, :mod:`pivoter.olmv0.names`)."""
    assert installed.csv is not None
    targets = target_namespaces(installed.csv) or []
    config: dict[str, Any] = {"targetNamespaces": targets}
    if object_names:
        config["objectNames"] = dict(object_names)
    sub_config = installed.spec.get("config") or {}
    deployment = {k: v for k, v in sub_config.items() if k in DEPLOYMENT_CONFIG_KEYS and v}
    if deployment:
        config["deploymentConfig"] = deployment
    return config


def _service_account(installed: InstalledOperator) -> dict[str, str] | None:
    group = installed.operator_groups[0] if installed.operator_groups else {}
    account = str((group.get("spec") or {}).get("serviceAccountName") or "")
    return {"name": account, "namespace": installed.namespace} if account else None


def _package(
    installed: InstalledOperator, object_names: Mapping[str, str] | None
) -> dict[str, Any]:
    package: dict[str, Any] = {
        "name": installed.package,
        "versionRange": installed.version,
        "config": package_config(installed, object_names),
    }
    if installed.channel:
        package["channel"] = installed.channel
    return package


def _record(installed: InstalledOperator) -> dict[str, Any]:
    return {"namespace": installed.namespace, "name": installed.name, "spec": dict(installed.spec)}


def resolution_for(
    installed: InstalledOperator,
    *,
    name: str,
    adoption_step: str,
    object_names: Mapping[str, str] | None = None,
    dependencies: Sequence[InstalledOperator] = (),
    dependency_names: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """The Resolution that takes ``installed`` over (with the ``dependencies`` OLM v0 installed
    for it, :mod:`pivoter.olmv0.groups`: one package each), pinned to the installed versions,
    created paused (it resolves and plans; the handover unpauses it once OLM v0's Subscriptions
    are gone). ``object_names``: the names OLM v0 gave ``installed``'s generated objects;
    ``dependency_names``: the same for each dependency, by package."""
    members = [installed, *dependencies]
    names = dependency_names or {}
    packages = [_package(installed, object_names)]
    packages += [_package(d, names.get(d.package)) for d in dependencies]
    approval = "Manual" if installed.spec.get("installPlanApproval") == "Manual" else "Automatic"
    spec: dict[str, Any] = {
        "packages": packages,
        "installNamespace": installed.namespace,
        "approval": approval,
        "adoptExisting": True,
        "paused": True,
    }
    account = _service_account(installed)
    if account:
        spec["serviceAccount"] = account
    annotations = {
        ANNOTATION_SUBSCRIPTION: json.dumps(_record(installed), sort_keys=True),
        ANNOTATION_CSV: installed.installed_csv,
        ANNOTATION_ADOPTION: adoption_step,
        # The first revision is the running CSVs: with Manual approval too, it asks for none
        # (pivoter.inputs.takeover); the handover removes it once adopted.
        ANNOTATION_TAKEOVER: InstalledBundle.annotation_of(
            [InstalledBundle(m.package, m.installed_csv, m.version) for m in members]
        ),
    }
    if dependencies:
        annotations[ANNOTATION_DEPENDENCIES] = json.dumps(
            [{**_record(d), "csv": d.installed_csv, "package": d.package} for d in dependencies],
            sort_keys=True,
        )
    return {
        "apiVersion": pivoter_api.API_VERSION,
        "kind": "Resolution",
        "metadata": {
            "name": name,
            "labels": {LABEL_ADOPTED_FROM: installed.namespace},
            "annotations": annotations,
        },
        "spec": spec,
    }


RECORD_LIMITS = safedata.Limits(max_bytes=256 << 10, max_depth=32, max_nodes=10_000)
"""An annotation is at most 256 KiB; the record is a Subscription's name and spec."""


def recorded_subscription(resource: Mapping[str, Any]) -> dict[str, Any]:
    """The Subscription an adoption Resolution recorded in :data:`ANNOTATION_SUBSCRIPTION`
    (its namespace, name and spec), or ``{}`` when there is none or it is not such a record
    (annotations are anyone's to edit: read through the safe loader)."""
    annotations = (resource.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ANNOTATION_SUBSCRIPTION)
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = safedata.load_json(text, limits=RECORD_LIMITS)
    except safedata.SafeDataError:
        return {}
    return value if isinstance(value, dict) else {}


def recorded_dependencies(resource: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dependencies an adoption Resolution took over with its Subscription
    (:data:`ANNOTATION_DEPENDENCIES`: each one's namespace, Subscription name and spec, CSV and
    package), or ``[]`` (none, or not such a record: read through the safe loader)."""
    annotations = (resource.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(ANNOTATION_DEPENDENCIES)
    if not isinstance(text, str) or not text:
        return []
    try:
        value = safedata.load_json(text, limits=RECORD_LIMITS)
    except safedata.SafeDataError:
        return []
    if not isinstance(value, list):
        return []
    keys = ("namespace", "name", "csv", "package")
    return [
        dict(v)
        for v in value
        if isinstance(v, dict) and all(isinstance(v.get(k), str) and v.get(k) for k in keys)
    ]
