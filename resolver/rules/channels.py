"""Channel graphs: OLM v0's replaces-chain ordering and the upgrade edges out of a bundle.

:func:`sort_channel` orders one channel head first along ``replaces``, dropping entries that
another entry ``skips`` (OLM v0 ``sortChannel``), and raises :class:`ChannelError` with OLM's
texts for cycles, missing heads or several chains. :func:`is_successor` is the legacy upgrade
edge test shared by every profile: ``replaces`` names the installed bundle, ``skips`` lists it,
or ``skipRange`` contains its version. Used by :mod:`resolver.profiles`.
"""

from __future__ import annotations

from collections.abc import Sequence

from resolver.catalog.model import ChannelEntry
from resolver.versions import RangeSyntaxError, Version, parse_range


class ChannelError(ValueError):
    """A channel whose entries cannot be ordered into one replaces chain."""


def sort_channel(package: str, channel: str, entries: Sequence[ChannelEntry]) -> list[str]:
    """Return the entry names of one channel, head first, skipped entries left out."""
    by_name = {e.name: e for e in entries}
    replaced = {e.replaces for e in entries if e.replaces}
    skipped = {s for e in entries for s in e.skips}
    heads = sorted(n for n in by_name if n not in replaced and n not in skipped)
    where = f'in channel "{channel}" of package "{package}"'
    if not heads:
        raise ChannelError(
            f"no channel heads (entries not replaced by another entry) found {where}"
        )
    chains: list[list[str]] = []
    for head in heads:
        chain: list[str] = []
        seen: set[str] = set()
        name = head
        while name in by_name:
            if name in seen:
                raise ChannelError(
                    f'a cycle exists in the chain of replacement beginning with "{head}" {where}'
                )
            seen.add(name)
            chain.append(name)
            name = by_name[name].replaces
        chains.append(chain)
    if len(chains) > 1:
        shown = ", ".join(c[0] if len(c) == 1 else f"{c[0]}...{c[-1]}" for c in chains)
        raise ChannelError(
            "a unique replacement chain within a channel is required to determine the relative "
            f"order between channel entries, but {len(chains)} replacement chains were found "
            f"{where}: {shown}"
        )
    return [n for n in chains[0] if n not in skipped]


def is_successor(
    entry: ChannelEntry, installed_name: str, installed_version: Version | None
) -> bool:
    """Return whether ``entry`` has an upgrade edge from the installed bundle."""
    if entry.replaces and entry.replaces == installed_name:
        return True
    if installed_name in entry.skips:
        return True
    if entry.skip_range and installed_version is not None:
        try:
            return parse_range(entry.skip_range, "blang").contains(installed_version)
        except RangeSyntaxError:
            return False
    return False
