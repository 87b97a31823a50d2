"""Every package of the shared real catalogs, resolved alone with the default profile (slow)."""

from __future__ import annotations

import pytest

from resolver.catalog.sources import open_source
from resolver.profiles.pivoter import Pivoter
from resolver.rules.inputs import (
    CatalogInput,
    Index,
    PackageRequest,
    ResolutionInput,
    Unsatisfiable,
)
from tests.tools import SHARED, requires_shared

pytestmark = [pytest.mark.slow, requires_shared]


@pytest.mark.parametrize("name", ["certified-operators-v4.20", "community-operators-prod-v4.20"])
def test_each_package_alone_resolves_or_is_explained(name: str) -> None:
    catalog = open_source(str(SHARED / "catalogs" / name)).fetch()
    sources = [CatalogInput(name, catalog)]
    index = Index(sources)
    resolved = unsat = 0
    summaries: list[list[str]] = []
    for package in sorted(p.name for p in catalog.packages):
        inp = ResolutionInput(sources, [PackageRequest(package)])
        try:
            choices = Pivoter(inp, index=index).resolve().choices
        except Unsatisfiable as err:
            unsat += 1
            summaries.append(err.summary)
            continue
        resolved += 1
        mine = [c for c in choices if c.package == package]
        assert len(mine) == 1
        assert len({c.package for c in choices}) == len(choices)
        # The newest bundle that is not olm.deprecated and whose needs are met: at least as new
        # as any bundle of the package without requirements.
        plain = [
            c
            for c in index.candidates(package)
            if c.version is not None
            and not any(
                p.type.endswith(".required") or p.type in ("olm.constraint", "olm.deprecated")
                for p in c.bundle.properties
            )
        ]
        if plain:
            assert mine[0].bundle.version
            assert index.candidates(package)
            newest_plain = max(c.version for c in plain if c.version is not None)
            chosen = next(
                c.version for c in index.candidates(package) if c.bundle is mine[0].bundle
            )
            assert chosen is not None
            assert chosen >= newest_plain
    assert resolved > 0
    # Every unsatisfiable package is explained in domain words: the package and what is missing.
    for summary in summaries:
        assert summary
        assert any(" is requested: " in line for line in summary), summary
    assert resolved + unsat == len(catalog.packages)
