"""One rule for every takeover: the first revision is exactly what runs now.

An input that takes over what another manager installed (an OLM v1 ClusterExtension whose
bundle operator-controller installed, a Resolution adopting an OLM v0 CSV) carries that
bundle as a typed fact, :attr:`InputSpec.takeover <pivoter.inputs.spec.InputSpec.takeover>`.
While the input has installed nothing itself (no active revision, no child), its resolution
takes that bundle as installed and pins its package to that exact version, so the first
revision selects what runs and nothing newer, even when the catalog has moved on since the
install. That revision needs no approval (:func:`is_takeover`): it changes no workload, it
records what the previous manager left. The next resolution starts from it like from any
active revision and follows the catalog's upgrade edges as that manager would have (OLM v0 and
OLM v1 both step to a successor of the installed bundle, never past one the catalog does not
connect).

Pure functions; called by :mod:`pivoter.inputs.engine`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pivoter.apis.views import InstalledBundle
from resolver.resolveset import ResolveSet
from resolver.rules.inputs import Installed, PackageRequest

__all__ = ["first_resolution", "is_takeover"]


def first_resolution(
    takeover: Sequence[InstalledBundle],
    requests: Sequence[PackageRequest],
    installed: Sequence[Installed],
) -> tuple[tuple[PackageRequest, ...], list[Installed]]:
    """The requests and installed state of a resolution: unchanged, unless the input has
    installed nothing (``installed`` is empty) and takes over the ``takeover`` bundles: then
    they are installed and each of their packages' requests is pinned to its version."""
    if not takeover or installed:
        return tuple(requests), list(installed)
    versions = {t.package: t.version for t in takeover}
    pinned = tuple(
        replace(r, version_range=versions[r.package]) if r.package in versions else r
        for r in requests
    )
    return pinned, [Installed(name=t.name, package=t.package, version=t.version) for t in takeover]


def is_takeover(
    takeover: Sequence[InstalledBundle], active: int | None, target: ResolveSet | None
) -> bool:
    """Whether ``target`` is the first revision of a takeover: nothing of the input is active and
    the target selects every bundle the previous manager runs (then no approval is asked)."""
    if not takeover or active is not None or target is None:
        return False
    selected = {(e.package, e.bundle) for e in target.entries}
    return all((t.package, t.name) in selected for t in takeover)
