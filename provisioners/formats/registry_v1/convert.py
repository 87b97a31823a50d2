"""registry+v1 -> plain objects: the format registered as ``registry+v1``.

:class:`RegistryV1` reads the bundle (:mod:`.bundle`), parses ``spec.config`` (:mod:`.config`),
picks the install mode (:mod:`.installmode`) and assembles the objects: CRDs, ServiceAccounts and
RBAC (:mod:`.rbac`), the bundle's other manifests (:mod:`.manifests`), the Service and
certificate of each Deployment serving webhooks or APIServices, and webhook configurations
(:mod:`.webhooks`), APIServices and their servers' delegated authentication (:mod:`.apiservices`)
and the operator Deployments (:mod:`.deployments`). The cluster side calls
:meth:`RegistryV1.convert_bundle` with a lookup of existing Secrets so that valid serving
certificates are kept; :meth:`RegistryV1.convert` is the plain :class:`BundleFormat` entry point.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from provisioners.formats.base import ConvertedBundle
from provisioners.formats.manifests import ManifestLimits
from provisioners.formats.registry_v1.apiservices import apiservice_objects, apiservice_ports
from provisioners.formats.registry_v1.bundle import MEDIA_TYPE, RegistryBundle, read_bundle
from provisioners.formats.registry_v1.certificates import CertificatePlan
from provisioners.formats.registry_v1.config import parse_config
from provisioners.formats.registry_v1.deployments import deployment_objects
from provisioners.formats.registry_v1.errors import InvalidBundleError, UnsupportedBundleError
from provisioners.formats.registry_v1.installmode import InstallTarget, resolve_install
from provisioners.formats.registry_v1.manifests import optional_kinds, other_objects
from provisioners.formats.registry_v1.rbac import rbac_objects, service_accounts
from provisioners.formats.registry_v1.webhooks import (
    SecretLookup,
    ServedPort,
    serving_endpoints,
    webhook_objects,
    webhook_ports,
)


@dataclass(frozen=True)
class Conversion:
    """Everything one conversion produced and decided."""

    bundle: RegistryBundle
    install: InstallTarget
    objects: list[dict[str, Any]]
    certificates: dict[str, CertificatePlan]
    """Per Deployment serving webhooks or APIServices: the certificate used and whether it was
    (re)issued."""
    optional_kinds: list[str]
    warnings: list[str]

    def summary(self) -> dict[str, str]:
        """String facts for status, logs and :attr:`ConvertedBundle.metadata`."""
        return {
            "package": self.bundle.package,
            "csv": self.bundle.csv.name,
            "version": self.bundle.csv.version,
            "channels": ",".join(self.bundle.channels),
            "defaultChannel": self.bundle.default_channel,
            "installMode": self.install.mode,
            "installNamespace": self.install.install_namespace,
            "targetNamespaces": self.install.annotation,
            "objects": str(len(self.objects)),
            "files": ",".join(self.bundle.files),
            "dependencies": json.dumps(self.bundle.dependencies, sort_keys=True),
            "properties": json.dumps(self.bundle.properties, sort_keys=True),
            "optionalKinds": ",".join(self.optional_kinds),
            "warnings": "; ".join(self.warnings),
            "certificates": "; ".join(
                f"{name}: {plan.reason}" for name, plan in sorted(self.certificates.items())
            ),
        }


FORMAT_CHECK_NAMESPACE = "pivoter-format-check"
"""The target namespace a configless format check assumes (see :meth:`RegistryV1.convert`)."""


@dataclass(frozen=True)
class RegistryV1:
    """registry+v1 (``core-rukpak-io-registry``): OLM bundles converted to plain objects."""

    limits: ManifestLimits = field(default_factory=ManifestLimits)
    secret_lookup: SecretLookup | None = None
    """Existing certificate Secrets, so valid ones are kept rather than re-issued."""
    clock: Callable[[], datetime] | None = None
    name: str = MEDIA_TYPE

    def convert(self, root: Path, config: Mapping[str, Any] | None = None) -> ConvertedBundle:
        """Convert the bundle at ``root``; raise a FormatError naming what is wrong.

        Without a ``config`` (the Bundle controller checking the format, before any
        BundleDeployment says where the operator goes), an operator that supports only install
        modes needing target namespaces is checked with one placeholder target: which namespaces
        it watches is the BundleDeployment's choice, not a fault of the bundle.
        """
        try:
            conversion = self.convert_bundle(root, config)
        except UnsupportedBundleError as exc:
            if config is not None or exc.field != "spec.installModes":
                raise
            conversion = self.convert_bundle(root, {"watchNamespace": FORMAT_CHECK_NAMESPACE})
        return ConvertedBundle(
            format=self.name, objects=conversion.objects, metadata=conversion.summary()
        )

    def convert_bundle(
        self,
        root: Path,
        config: Mapping[str, Any] | None = None,
        *,
        lookup: SecretLookup | None = None,
        now: datetime | None = None,
    ) -> Conversion:
        """Convert with the full result; ``lookup`` and ``now`` override the instance's."""
        options = parse_config(config)
        bundle = read_bundle(root, self.limits)
        csv = bundle.csv
        install = resolve_install(csv, bundle.package, options)
        crds = {m.name: _without_server_fields(copy.deepcopy(m.object)) for m in bundle.crds}
        deployments = deployment_objects(csv, install, options.deployment)
        # One Service and one certificate per serving Deployment, for its webhooks and
        # APIServices together (as OLM v0 does).
        ports: dict[str, list[ServedPort]] = {}
        for found in (
            webhook_ports(csv, install, deployments, crds),
            apiservice_ports(csv, deployments),
        ):
            for deployment_name, served in found.items():
                ports.setdefault(deployment_name, []).extend(served)
        serving = serving_endpoints(
            csv,
            install,
            deployments,
            ports,
            lookup=lookup or self.secret_lookup,
            now=now or (self.clock() if self.clock else None),
            policy=options.certificates,
        )
        webhooks = webhook_objects(csv, install, crds, serving.endpoints)
        apiservices = apiservice_objects(csv, install, serving.endpoints)
        others = [_without_server_fields(o) for o in other_objects(bundle.others, install)]
        shipped_accounts = {o["metadata"]["name"] for o in others if o["kind"] == "ServiceAccount"}
        objects = [
            *crds.values(),
            *service_accounts(csv, install, shipped_accounts),
            *rbac_objects(csv, install),
            *others,
            *serving.objects,
            *webhooks,
            *apiservices,
            *deployments.values(),
        ]
        _rename(objects, options.object_names)
        _check_unique(objects, bundle)
        return Conversion(
            bundle=bundle,
            install=install,
            # Objects share rule lists and CSV fragments; callers get independent copies.
            objects=copy.deepcopy(objects),
            certificates=serving.certificates,
            optional_kinds=optional_kinds(others),
            warnings=list(bundle.warnings),
        )


def _rename(objects: list[dict[str, Any]], names: Mapping[tuple[str, str], str]) -> None:
    """Give generated objects the names ``objectNames`` asks for (in every namespace); bindings
    follow the roles they reference."""
    if not names:
        return
    for obj in objects:
        metadata = obj["metadata"]
        new = names.get((obj["kind"], metadata["name"]))
        if new:
            metadata["name"] = new
        ref = obj.get("roleRef")
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding") and isinstance(ref, dict):
            renamed = names.get((str(ref.get("kind")), str(ref.get("name"))))
            if renamed:
                ref["name"] = renamed


def _without_server_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what only the API server writes (bundles generated from live objects carry it)."""
    obj.pop("status", None)
    metadata = obj["metadata"]
    for key in ("creationTimestamp", "resourceVersion", "uid", "generation", "managedFields"):
        metadata.pop(key, None)
    return obj


def _check_unique(objects: list[dict[str, Any]], bundle: RegistryBundle) -> None:
    seen: set[tuple[str, str, str]] = set()
    for obj in objects:
        metadata = obj["metadata"]
        key = (obj["kind"], metadata.get("namespace", ""), metadata["name"])
        if key in seen:
            where = f"{key[1]}/{key[2]}" if key[1] else key[2]
            raise InvalidBundleError(
                bundle.csv.where,
                "",
                f"the conversion yields {key[0]} {where} twice: a manifest of the bundle has the "
                "name of an object generated from the CSV (or two manifests share it); rename it",
            )
        seen.add(key)
