"""The errors the registry+v1 format raises, each naming the file and field at fault.

Every error is a :class:`~provisioners.formats.base.FormatError`, so the cluster side maps it to
``Unpacked=False`` / ``Installed=False`` like any other format error and keeps the previous content
running. Raised by the readers and builders of this package.
"""

from __future__ import annotations

from provisioners.formats.base import FormatError, InvalidConfigError, InvalidManifestError


class InvalidBundleError(InvalidManifestError):
    """The bundle's metadata, CSV or manifests break the registry+v1 rules.

    ``where`` names the file or object and ``field`` the path inside it (``spec.install.strategy``).
    """

    def __init__(self, where: str, field: str, problem: str) -> None:
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
        self.where = where
        self.field = field
        self.problem = problem


class UnsupportedBundleError(FormatError):
    """The bundle is well formed but asks for something pivoter refuses to install (and why)."""

    def __init__(self, where: str, field: str, problem: str) -> None:
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")
        self.where = where
        self.field = field
        self.problem = problem


class MissingTargetNamespacesError(UnsupportedBundleError, InvalidConfigError):
    """The operator supports only install modes that need target namespaces, and
    ``spec.config`` names none: the bundle is fine, its configuration is not (OLM v1 reports
    this as ``InvalidConfiguration``)."""


class InvalidInstallConfigError(InvalidConfigError):
    """The BundleDeployment ``spec.config`` does not fit this bundle; ``field`` names the key."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"spec.config.{field}: {problem}" if field else f"spec.config: {problem}")
        self.field = field
        self.problem = problem
