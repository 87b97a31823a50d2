"""The interface every bundle format implements, and the errors they raise.

A format turns an unpacked bundle tree into the plain Kubernetes objects to apply. plain+v0 is in
:mod:`provisioners.formats.plain`; registry+v1 and helm plug in by implementing
:class:`BundleFormat` and registering in :mod:`provisioners.formats`. The appliers call
``convert`` on a stored bundle's tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from provisioners.errors import ProvisionerError


class FormatError(ProvisionerError):
    """The bundle tree does not follow its format; the message names the file and problem."""


class MissingManifestsError(FormatError):
    """The bundle has no ``manifests/`` directory."""


class NestedManifestsError(FormatError):
    """``manifests/`` contains a subdirectory, which the format does not allow."""


class EmptyBundleError(FormatError):
    """The bundle contains no objects."""


class InvalidManifestError(FormatError):
    """A manifest file cannot be parsed, is too large, or holds an invalid object."""


class InvalidConfigError(FormatError):
    """The format configuration (BundleDeployment ``spec.config``) is not accepted."""


@dataclass(frozen=True)
class ConvertedBundle:
    """The result of a conversion: the objects to apply plus what the format learnt."""

    format: str
    objects: list[dict[str, Any]]
    metadata: dict[str, str] = field(default_factory=dict)
    """Format-specific facts (e.g. files read, package name) for status and logs."""
    hooks: list[Hook] = field(default_factory=list)
    """Objects run as steps before or after the apply of an install or upgrade (Helm hooks);
    not part of ``objects``, so never pruned or drift-corrected."""


@dataclass(frozen=True)
class Hook:
    """One object run as a step around an install or an upgrade (a Helm chart hook)."""

    events: tuple[str, ...]
    """``pre-install``, ``post-install``, ``pre-upgrade`` and/or ``post-upgrade``."""
    weight: int
    delete_policies: tuple[str, ...]
    """``before-hook-creation`` (the default), ``hook-succeeded``, ``hook-failed``."""
    object: dict[str, Any]


class BundleFormat(Protocol):
    """Converts an unpacked bundle tree into Kubernetes objects."""

    @property
    def name(self) -> str:
        """The format's identifier as used in bundle metadata (e.g. ``plain+v0``)."""
        ...

    def convert(self, root: Path, config: Mapping[str, Any] | None = None) -> ConvertedBundle:
        """Read the bundle at ``root`` and return its objects, or raise a :class:`FormatError`."""
        ...
