"""What ``catalog test`` reports: findings with a stable code, a severity and the objects concerned.

Every check in :mod:`resolver.channeltest` produces :class:`Finding` objects whose ``code`` is one
of :data:`CODES` (stable: tools and expectations match on codes, never on prose). Validation
findings from :func:`resolver.catalog.validate.validate` are wrapped with the code
``validation.<category>`` and always come first. Read by the CLI (``pivoter catalog test``), the
diff and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from resolver.catalog.model import Origin
from resolver.channeltest.graph import node_id

ERROR = "error"
"""A defect that breaks users: they cannot install, upgrade, or reach the head."""
WARNING = "warning"
"""Odd but survivable: users are not stuck, yet the graph probably does not say what was meant."""

CODES: dict[str, tuple[str, str]] = {
    # code: (severity, what it means)
    "stranded-entry": (
        ERROR,
        "an entry other than the head has no upgrade edge out of it in its channel",
    ),
    "no-path-to-head": (
        ERROR,
        "an entry's upgrades end somewhere other than the channel head",
    ),
    "upgrade-cycle": (ERROR, "following the next upgrade from an entry comes back to it"),
    "default-head-deprecated": (
        ERROR,
        "the head of the default channel is deprecated: new installs get a deprecated bundle",
    ),
    "unsatisfied-dependency": (
        ERROR,
        "a channel head requires a package or API that no bundle of the given catalogs provides",
    ),
    "expectation-failed": (ERROR, "a statement of the --expect file does not hold"),
    "template-unresolved": (
        ERROR,
        "a template bundle whose name or version cannot be known without pulling its image",
    ),
    "skipped-entry": (
        WARNING,
        "entries listed in another entry's skips: OLM v0 never offers them for installation",
    ),
    "unreachable-entry": (
        WARNING,
        "no entry upgrades to this one although older entries exist: only a direct install gets it",
    ),
    "downgrade-edge": (
        WARNING,
        "an upgrade edge to a lower version (pivoter and OLM v1 refuse to follow it)",
    ),
    "skiprange-matches-nothing": (
        WARNING,
        "a skipRange that contains no version of any bundle of the package",
    ),
    "skiprange-covers-newer": (
        WARNING,
        "a skipRange that contains the entry's own or a newer version: an edge back in time",
    ),
    "default-channel-deprecated": (
        WARNING,
        "the default channel is deprecated: new installs start on a deprecated channel",
    ),
    "head-deprecated": (WARNING, "a channel's head bundle is deprecated, its channel is not"),
    "default-channel-behind": (
        WARNING,
        "another channel's head is newer than the default channel's head",
    ),
    "unsatisfied-dependency-old": (
        WARNING,
        "a bundle that is not a channel head requires something no bundle of the catalogs provides",
    ),
    "api-claimed-twice": (
        WARNING,
        "two packages provide the same API (group/version/kind): they cannot be installed together",
    ),
    "template-skipped": (WARNING, "a template file that could not be expanded at all"),
}
"""Every code ``catalog test`` emits (besides ``validation.<category>``), with its severity."""


class Place(TypedDict, total=False):
    """Where a finding is: the keyword arguments of :func:`finding` besides code and message."""

    package: str
    channel: str
    bundle: str
    origin: Origin | None


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing ``catalog test`` found: how bad, which kind (``code``), what, and where."""

    severity: str
    code: str
    message: str
    package: str = ""
    channel: str = ""
    bundle: str = ""
    origin: Origin | None = None
    detail: str = ""
    """What the finding is about besides its bundle, short and stable (the requirement, the
    edge, where a path ends): what :mod:`resolver.channeltest.grouping` lists for a group."""

    def __str__(self) -> str:
        where = f"{self.origin}: " if self.origin else ""
        return f"{where}{self.severity}: {self.message} [{self.code}]"

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What makes two findings the same defect across two versions of a catalog: code,
        package, channel and bundle (never the message, whose wording may change)."""
        return (self.code, self.package, self.channel, self.bundle)

    def to_dict(self) -> dict[str, Any]:
        """The finding as plain data (``-o json``); ``node`` is the id of the bundle's node in
        the channel's drawing (:func:`resolver.channeltest.graph.node_id`), when there is one."""
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "package": self.package,
            "channel": self.channel,
            "bundle": self.bundle,
            "detail": self.detail,
            "node": node_id(self.channel, self.bundle) if self.channel and self.bundle else "",
            "file": self.origin.path if self.origin else "",
            "line": self.origin.line if self.origin else 0,
        }


def finding(
    code: str,
    message: str,
    *,
    package: str = "",
    channel: str = "",
    bundle: str = "",
    origin: Origin | None = None,
    detail: str = "",
) -> Finding:
    """Build a finding of ``code`` with the severity :data:`CODES` gives it."""
    severity, _ = CODES[code]
    return Finding(severity, code, message, package, channel, bundle, origin, detail)
