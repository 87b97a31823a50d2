"""Bundle formats: convert an unpacked bundle tree into Kubernetes objects.

:func:`format_for` maps a format name (``plain+v0``, ``registry+v1``; helm later) to its
:class:`~provisioners.formats.base.BundleFormat`. Called by the appliers and the cluster side.
"""

from __future__ import annotations

from provisioners.formats.base import BundleFormat, ConvertedBundle, FormatError
from provisioners.formats.helm import HelmFormat
from provisioners.formats.plain import PlainV0
from provisioners.formats.registry_v1 import RegistryV1

FORMATS: dict[str, BundleFormat] = {
    "plain+v0": PlainV0(),
    "registry+v1": RegistryV1(),
    "helm": HelmFormat(),
}


def format_for(name: str) -> BundleFormat:
    """Return the format registered under ``name`` or raise :class:`FormatError`."""
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(
            f"unknown bundle format {name!r}; known formats: {', '.join(sorted(FORMATS))}"
        ) from None


__all__ = ["FORMATS", "BundleFormat", "ConvertedBundle", "FormatError", "format_for"]
