"""``catalog diff OLD NEW``: for every bundle users may have installed from OLD, what NEW does to
them.

A user is identified by (package, channel, installed bundle) for every entry of every channel of
OLD. In NEW the same user gets: the channel's new head, a different path to it, no path any more
(now stranded), a deprecation, or the bundle removed (then the path from the installed bundle is
computed from NEW's entries with the same successor test, as a resolution would). Called by
``pivoter catalog diff``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from resolver.catalog.model import Catalog
from resolver.channeltest.graph import ChannelGraph, Path, channel_graphs

NEW_HEAD = "new-head"
NEW_PATH = "new-path"
NOW_STRANDED = "now-stranded"
NOW_DEPRECATED = "now-deprecated"
REMOVED = "removed"
CHANNEL_REMOVED = "channel-removed"


@dataclass(frozen=True, slots=True)
class Change:
    """What changes for the users of one installed bundle in one channel."""

    package: str
    channel: str
    bundle: str
    kinds: tuple[str, ...]
    old_path: tuple[str, ...]
    new_path: tuple[str, ...]
    old_head: str
    new_head: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The change as plain data."""
        return {
            "package": self.package,
            "channel": self.channel,
            "bundle": self.bundle,
            "changes": list(self.kinds),
            "old_path": list(self.old_path),
            "new_path": list(self.new_path),
            "old_head": self.old_head,
            "new_head": self.new_head,
            "detail": self.detail,
        }


@dataclass(slots=True)
class UpgradeDiff:
    """Every change, plus how many installed bundles were compared."""

    changes: list[Change] = field(default_factory=list)
    compared: int = 0

    def counts(self) -> dict[str, int]:
        """How many users see each kind of change."""
        out: dict[str, int] = {}
        for c in self.changes:
            for k in c.kinds:
                out[k] = out.get(k, 0) + 1
        return dict(sorted(out.items()))


def diff_catalogs(old: Catalog, new: Catalog, package: str | None = None) -> UpgradeDiff:
    """Compare what users of ``old`` get in ``new`` (optionally one package)."""
    new_graphs = {(g.package, g.channel): g for g in channel_graphs(new, package)}
    result = UpgradeDiff()
    for og in channel_graphs(old, package):
        ng = new_graphs.get((og.package, og.channel))
        for name in og.by_version():
            result.compared += 1
            change = _compare(og, ng, name, new)
            if change is not None:
                result.changes.append(change)
    return result


def _reaches(g: ChannelGraph, path: Path, start: str) -> bool:
    return not path.cycle and g.head in (path.end, start)


def _compare(og: ChannelGraph, ng: ChannelGraph | None, name: str, new: Catalog) -> Change | None:
    old_path = og.path(name)
    base = (og.package, og.channel, name)
    if ng is None:
        return Change(
            *base,
            (CHANNEL_REMOVED,),
            old_path.steps,
            (),
            og.head or "",
            "",
            f"channel {og.channel!r} is gone from the new catalog",
        )
    kinds: list[str] = []
    detail = ""
    graph = ng
    if name not in ng.entries:
        kinds.append(REMOVED)
        bundle = new.bundle(og.package, name)
        detail = "no longer in the channel" + ("" if bundle else " nor in the catalog")
        graph = ng.with_installed(name, og.versions.get(name))
    new_path = graph.path(name)
    if og.head != ng.head:
        kinds.append(NEW_HEAD)
    if _reaches(og, old_path, name) and not _reaches(graph, new_path, name):
        kinds.append(NOW_STRANDED)
    elif old_path.steps != new_path.steps and REMOVED not in kinds:
        kinds.append(NEW_PATH)
    was = name in og.deprecated or bool(og.channel_deprecated or og.package_deprecated)
    now = name in ng.deprecated or bool(ng.channel_deprecated or ng.package_deprecated)
    if now and not was:
        kinds.append(NOW_DEPRECATED)
    if not kinds:
        return None
    return Change(
        *base, tuple(kinds), old_path.steps, new_path.steps, og.head or "", ng.head or "", detail
    )
