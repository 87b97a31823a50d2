"""Package-level checks: default channel and deprecations consistent with what users get.

Called by :func:`resolver.channeltest.report.run_catalog_test` once per package, with the
graphs of its
channels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from resolver.catalog.model import Package
from resolver.channeltest.findings import Finding, Place, finding
from resolver.channeltest.graph import ChannelGraph


def check_package(package: Package, graphs: Sequence[ChannelGraph]) -> list[Finding]:
    """Findings about ``package``'s default channel and deprecations."""
    by_name = {g.channel: g for g in graphs}
    out: list[Finding] = list(_heads_deprecated(package, graphs))
    default = by_name.get(package.default_channel)
    if default is None:
        return out  # a missing default channel is a validation error, reported already
    kw: Place = {"package": package.name, "channel": default.channel, "origin": package.origin}
    if default.channel_deprecated and not default.package_deprecated:
        out.append(
            finding(
                "default-channel-deprecated",
                f"package {package.name!r}: the default channel {default.channel!r} is "
                f"deprecated ({default.channel_deprecated!r}): new installs start on it",
                **kw,
            )
        )
    head = default.head
    if head is not None and head in default.deprecated and not default.package_deprecated:
        out.append(
            finding(
                "default-head-deprecated",
                f"package {package.name!r}: {head}, the head of the default channel "
                f"{default.channel!r}, is deprecated ({default.deprecated[head]!r}): every new "
                "install gets a deprecated bundle",
                package=package.name,
                channel=default.channel,
                bundle=head,
                origin=package.origin,
            )
        )
    out.extend(_default_behind(package, default, graphs))
    return out


def _heads_deprecated(package: Package, graphs: Sequence[ChannelGraph]) -> Iterable[Finding]:
    for g in graphs:
        head = g.head
        if g.channel == package.default_channel or head is None:
            continue
        if head in g.deprecated and not g.channel_deprecated and not g.package_deprecated:
            yield finding(
                "head-deprecated",
                f"package {package.name!r}, channel {g.channel!r}: its head {head} is "
                f"deprecated ({g.deprecated[head]!r}) but the channel is not: users upgrade "
                "into a deprecated bundle",
                package=package.name,
                channel=g.channel,
                bundle=head,
                origin=package.origin,
            )


def _default_behind(
    package: Package, default: ChannelGraph, graphs: Sequence[ChannelGraph]
) -> Iterable[Finding]:
    head = default.head
    mine = default.versions.get(head) if head else None
    if mine is None:
        return
    newer = []
    for g in graphs:
        other = g.head
        theirs = g.versions.get(other) if other else None
        if g is default or theirs is None or g.channel_deprecated:
            continue
        # Prerelease channels (alpha, candidate, ...) run ahead on purpose: only a newer release
        # ahead of the default is worth a look.
        if theirs > mine and not theirs.prerelease:
            newer.append(f"{g.channel} ({theirs})")
    if newer:
        yield finding(
            "default-channel-behind",
            f"package {package.name!r}: the default channel {default.channel!r} ends at "
            f"{mine}, but {', '.join(sorted(newer))} offer newer releases",
            package=package.name,
            channel=default.channel,
            origin=package.origin,
        )
