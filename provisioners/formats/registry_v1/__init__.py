"""The registry+v1 bundle format (OLM bundles): read, check and convert to plain objects.

Registered as ``registry+v1`` (provisioner class ``core-rukpak-io-registry``) in
:mod:`provisioners.formats`. :class:`RegistryV1` is the entry point; the modules of this package
each own one step (see :mod:`provisioners.formats.registry_v1.convert`).
"""

from __future__ import annotations

from provisioners.formats.registry_v1.bundle import MEDIA_TYPE, RegistryBundle, read_bundle
from provisioners.formats.registry_v1.certificates import (
    CertificatePlan,
    ServingCertificate,
    plan_certificate,
    renewal_reason,
)
from provisioners.formats.registry_v1.config import (
    CONFIG_KEYS,
    CertificatePolicy,
    DeploymentConfig,
    RegistryV1Config,
    parse_config,
)
from provisioners.formats.registry_v1.convert import Conversion, RegistryV1
from provisioners.formats.registry_v1.errors import (
    InvalidBundleError,
    InvalidInstallConfigError,
    UnsupportedBundleError,
)
from provisioners.formats.registry_v1.installmode import InstallTarget
from provisioners.formats.registry_v1.webhooks import SecretLookup

PROVISIONER_CLASS = "core-rukpak-io-registry"

__all__ = [
    "CONFIG_KEYS",
    "MEDIA_TYPE",
    "PROVISIONER_CLASS",
    "CertificatePlan",
    "CertificatePolicy",
    "Conversion",
    "DeploymentConfig",
    "InstallTarget",
    "InvalidBundleError",
    "InvalidInstallConfigError",
    "RegistryBundle",
    "RegistryV1",
    "RegistryV1Config",
    "SecretLookup",
    "ServingCertificate",
    "UnsupportedBundleError",
    "parse_config",
    "plan_certificate",
    "read_bundle",
    "renewal_reason",
]
