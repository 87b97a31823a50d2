"""The four deprecation conditions of a ClusterExtension, from its catalog's ``olm.deprecations``.

OLM v1's rules (operator-controller ``SetDeprecationStatus``): ``PackageDeprecated``,
``ChannelDeprecated`` (a deprecated channel among those requested, or any channel of the package
when none is requested) and ``BundleDeprecated`` (the *installed* bundle) are True with the
catalog's messages, False with ``NotDeprecated``; ``Deprecated`` rolls them up (messages joined
by newlines). Without catalog data (the request did not resolve) all four are Unknown with
``DeprecationStatusUnknown``, except ``BundleDeprecated``, which is ``Absent`` while nothing is
installed. Pure functions; called by :mod:`pivoter.olmv1.status`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pivoter.apis import olmv1
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN
from resolver.catalog.model import Deprecation

__all__ = ["deprecation_conditions"]

UNAVAILABLE = "deprecation status unknown: catalog data unavailable"

Condition4 = tuple[str, str, str, str]
"""(type, status, reason, message)."""


def deprecation_conditions(
    deprecation: Deprecation | None,
    *,
    has_catalog_data: bool,
    channels: Sequence[str],
    installed_bundle: str,
) -> list[Condition4]:
    """The four conditions, in OLM v1's order (Deprecated first)."""
    if not has_catalog_data:
        unknown_bundle = (
            (olmv1.REASON_DEPRECATION_STATUS_UNKNOWN, UNAVAILABLE)
            if installed_bundle
            else (olmv1.REASON_ABSENT, "no bundle installed yet")
        )
        return [
            (olmv1.TYPE_DEPRECATED, UNKNOWN, olmv1.REASON_DEPRECATION_STATUS_UNKNOWN, UNAVAILABLE),
            (
                olmv1.TYPE_PACKAGE_DEPRECATED,
                UNKNOWN,
                olmv1.REASON_DEPRECATION_STATUS_UNKNOWN,
                UNAVAILABLE,
            ),
            (
                olmv1.TYPE_CHANNEL_DEPRECATED,
                UNKNOWN,
                olmv1.REASON_DEPRECATION_STATUS_UNKNOWN,
                UNAVAILABLE,
            ),
            (olmv1.TYPE_BUNDLE_DEPRECATED, UNKNOWN, *unknown_bundle),
        ]
    entries = deprecation.entries if deprecation is not None else ()
    wanted = set(channels)
    package = [e.message for e in entries if e.schema == "olm.package" and e.message]
    channel = [
        e.message
        for e in entries
        if e.schema == "olm.channel" and (not wanted or e.name in wanted) and e.message
    ]
    bundle = [
        e.message
        for e in entries
        if e.schema == "olm.bundle"
        and installed_bundle
        and e.name == installed_bundle
        and e.message
    ]
    everything = package + channel + bundle
    out: list[Condition4] = [
        _one(olmv1.TYPE_DEPRECATED, everything, "not deprecated"),
        _one(olmv1.TYPE_PACKAGE_DEPRECATED, package, "package not deprecated"),
        _one(olmv1.TYPE_CHANNEL_DEPRECATED, channel, "channel not deprecated"),
    ]
    if not installed_bundle:
        out.append(
            (olmv1.TYPE_BUNDLE_DEPRECATED, UNKNOWN, olmv1.REASON_ABSENT, "no bundle installed yet")
        )
    else:
        out.append(_one(olmv1.TYPE_BUNDLE_DEPRECATED, bundle, "bundle not deprecated"))
    return out


def _one(type_: str, messages: list[str], negative: str) -> Condition4:
    if messages:
        return (type_, TRUE, olmv1.REASON_DEPRECATED, "\n".join(messages))
    return (type_, FALSE, olmv1.REASON_NOT_DEPRECATED, negative)
