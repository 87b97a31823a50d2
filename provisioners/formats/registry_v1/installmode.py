"""Choosing the install namespace, the target namespaces and so the OLM install mode.

OLM decides the mode from the targets: none (all namespaces) is ``AllNamespaces``; only the install
namespace is ``OwnNamespace``; one other namespace is ``SingleNamespace``; several is
``MultiNamespace``. The CSV must declare that mode supported, or the install is refused with the
modes it does support and the config that would select one. Called by
:mod:`~provisioners.formats.registry_v1.convert`.
"""

from __future__ import annotations

from dataclasses import dataclass

from provisioners.formats.registry_v1.clusterserviceversion import (
    ALL_NAMESPACES,
    INSTALL_MODES,
    MULTI_NAMESPACE,
    OWN_NAMESPACE,
    SINGLE_NAMESPACE,
    ClusterServiceVersion,
)
from provisioners.formats.registry_v1.config import RegistryV1Config
from provisioners.formats.registry_v1.errors import (
    MissingTargetNamespacesError,
    UnsupportedBundleError,
)
from provisioners.formats.registry_v1.names import bounded_name

SUGGESTED_NAMESPACE_ANNOTATION = "operatorframework.io/suggested-namespace"


@dataclass(frozen=True)
class InstallTarget:
    """Where the operator runs and what it watches."""

    mode: str
    install_namespace: str
    target_namespaces: tuple[str, ...]
    """Empty for AllNamespaces."""

    @property
    def all_namespaces(self) -> bool:
        """Whether the operator watches every namespace."""
        return self.mode == ALL_NAMESPACES

    @property
    def annotation(self) -> str:
        """The value of ``olm.targetNamespaces`` (empty string for all namespaces)."""
        return ",".join(self.target_namespaces)


def mode_of(install_namespace: str, targets: tuple[str, ...]) -> str:
    """The OLM install mode that ``targets`` amount to."""
    if not targets:
        return ALL_NAMESPACES
    if targets == (install_namespace,):
        return OWN_NAMESPACE
    if len(targets) == 1:
        return SINGLE_NAMESPACE
    return MULTI_NAMESPACE


def resolve_install(
    csv: ClusterServiceVersion, package: str, config: RegistryV1Config
) -> InstallTarget:
    """Pick namespace, targets and mode from ``config`` and the CSV; refuse unsupported modes."""
    install_namespace = (
        config.install_namespace
        or csv.annotations.get(SUGGESTED_NAMESPACE_ANNOTATION, "").strip()
        or bounded_name(package, "system", label=True)
    )
    supported = [mode for mode in INSTALL_MODES if csv.supports(mode)]
    targets = config.target_namespaces
    if targets is None:
        if csv.supports(ALL_NAMESPACES):
            targets = ()
        elif csv.supports(OWN_NAMESPACE):
            targets = (install_namespace,)
        else:
            raise MissingTargetNamespacesError(
                csv.where,
                "spec.installModes",
                f"the operator supports only {', '.join(supported)}, which need target "
                "namespaces: set spec.config.targetNamespaces (or watchNamespace)",
            )
    mode = mode_of(install_namespace, targets)
    if not csv.supports(mode):
        chosen = f"targetNamespaces {list(targets)}" if targets else "all namespaces"
        raise UnsupportedBundleError(
            csv.where,
            "spec.installModes",
            f"install mode {mode} (from {chosen} with installNamespace {install_namespace!r}) is "
            f"not supported by the operator; it supports {', '.join(supported)}",
        )
    return InstallTarget(mode=mode, install_namespace=install_namespace, target_namespaces=targets)
