"""Bundle sources: fetch bundle content (image, git, http, ConfigMaps) into a directory.

:func:`fetch` dispatches on the spec type to the matching source; every source unpacks through
:mod:`provisioners.unpack` and raises :class:`provisioners.errors.SourceError` subclasses. The
cluster side builds a spec from a Bundle's ``spec.source`` (reading Secrets and ConfigMaps) and
calls :func:`fetch` with a store staging directory.
"""

from __future__ import annotations

from pathlib import Path

from provisioners.sources.base import FetchOptions, FetchResult, Source
from provisioners.sources.configmaps import ConfigMapContent, ConfigMapsSource, ConfigMapsSpec
from provisioners.sources.git import GitAuth, GitRef, GitSource, GitSpec
from provisioners.sources.http import HttpSource, HttpSpec
from provisioners.sources.image import ImageSource, ImageSpec

SourceSpec = ImageSpec | GitSpec | HttpSpec | ConfigMapsSpec


def fetch(spec: SourceSpec, dest: Path, options: FetchOptions | None = None) -> FetchResult:
    """Fetch the bundle described by ``spec`` into the empty directory ``dest``."""
    options = options or FetchOptions()
    if isinstance(spec, ImageSpec):
        return ImageSource().fetch(spec, dest, options)
    if isinstance(spec, GitSpec):
        return GitSource().fetch(spec, dest, options)
    if isinstance(spec, HttpSpec):
        return HttpSource().fetch(spec, dest, options)
    return ConfigMapsSource().fetch(spec, dest, options)


__all__ = [
    "ConfigMapContent",
    "ConfigMapsSpec",
    "FetchOptions",
    "FetchResult",
    "GitAuth",
    "GitRef",
    "GitSpec",
    "HttpSpec",
    "ImageSpec",
    "Source",
    "SourceSpec",
    "fetch",
]
