"""The wire comparisons of the other tests, on the full shared catalogs (minutes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from resolver.catalog.load import load_directory
from resolver.catalog.sources import RegistrySource
from tests.tools import SHARED, requires_shared
from tests.wire.conftest import OpmServer, PivoterServer
from tests.wire.rpc import Registry
from tests.wire.test_grpc_client import wire_view

pytestmark = [pytest.mark.slow, pytest.mark.opm, requires_shared]

FULL = [
    "community-operators-prod-v4.20",
    "certified-operators-v4.20",
    "community-operators-prod-v4.16",
    "operator-registry-testdata/alpha/action/testdata/index-declcfgs/latest",
    "operator-registry-testdata/fbc-dir/file-based-catalog",
]


@pytest.mark.parametrize("name", FULL)
def test_full_catalog_over_grpc_matches_opm(
    name: str,
    opm_server: Callable[[Path], OpmServer],
    pivoter_server: Callable[..., PivoterServer],
) -> None:
    directory = SHARED / "catalogs" / name
    opm = opm_server(directory)
    theirs = Registry(opm.target)
    ours_server = pivoter_server(directory)
    ours = Registry(ours_server.target)
    catalog = load_directory(directory, use_cache=False)

    listed = theirs.call("ListBundles")
    assert len(listed.messages) == sum(len(c.entries) for c in catalog.channels)
    assert ours.call("ListBundles").key() == listed.key()
    for pkg in catalog.packages:
        assert ours.call("GetPackage", name=pkg.name).key() == (
            theirs.call("GetPackage", name=pkg.name).key()
        )
    for bundle in listed.messages:
        query = {
            "pkgName": bundle.packageName,
            "channelName": bundle.channelName,
            "csvName": bundle.csvName,
        }
        assert ours.call("GetBundle", **query).key() == theirs.call("GetBundle", **query).key()

    fetched = RegistrySource(f"grpc://{opm.target}").fetch()
    assert wire_view(fetched) == wire_view(catalog)
    theirs.close()
    ours.close()
