"""What every bundle source shares: the fetch result, the Source protocol and the limits.

A source fetches bundle content into an empty directory (a store staging directory, see
:mod:`provisioners.store`) and reports what it resolved the spec to, so the cluster side can
record ``status.resolvedSource``. Implementations: :mod:`.image`, :mod:`.git`, :mod:`.http`,
:mod:`.configmaps`; :func:`provisioners.sources.fetch` dispatches on the spec type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from provisioners.unpack import UnpackLimits

if TYPE_CHECKING:
    from provisioners.verification import Verdict

SpecT_contra = TypeVar("SpecT_contra", contravariant=True)


@dataclass(frozen=True)
class FetchResult:
    """What a fetch resolved to: ``resolvedSource`` (rukpak's shape), revision and warnings."""

    resolved_source: dict[str, Any]
    """E.g. ``{"type": "image", "image": {"ref": "host/repo@sha256:..."}}``."""
    revision: str
    """The immutable identity fetched: an image digest, a git commit, or a content digest."""
    warnings: list[str] = field(default_factory=list)
    """Things the user should know but that did not fail the fetch (e.g. a mutable tag)."""
    served_by: str = ""
    """The mirror that served the content (``host/repository@digest``); empty: the source."""
    verification: tuple[Verdict, ...] = ()
    """An image's signature checks (:mod:`provisioners.verification`), one per policy: accepted
    (the digest and who signed it), or refused under mode ``warn`` (it was unpacked anyway);
    empty: not checked (no policy, mode ``off``, or not an image)."""


@dataclass(frozen=True)
class FetchOptions:
    """Limits and timeouts shared by all sources."""

    limits: UnpackLimits = field(default_factory=UnpackLimits)
    timeout_seconds: float = 30.0
    """Longest wait for a server to answer or send the next bytes."""
    deadline_seconds: float = 600.0
    """Longest a whole fetch may take."""


class Source(Protocol[SpecT_contra]):
    """Fetches bundle content described by a spec into a directory."""

    def fetch(self, spec: SpecT_contra, dest: Path, options: FetchOptions) -> FetchResult:
        """Write the bundle tree into the empty directory ``dest`` and describe what was fetched."""
        ...
