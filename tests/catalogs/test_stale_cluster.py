"""A Catalog read from ``pivoter catalog serve`` whose directory broke: the server keeps serving the
last good content and says it is stale; the Catalog's status must say so too (``Serving=False``,
reason ``Stale``, the server's reason in the message), and clear at the server's next good reload.
Over both gRPC and HTTP, on the control plane, with the reconciler driven directly."""

from __future__ import annotations

import pytest

from pivoter.catalogs.errors import REASON_FETCHED, REASON_STALE
from tests.catalogs.conftest import CatalogServer, Harness, condition, rv
from tests.catalogs.helpers import BASE_BUNDLES, BASE_PACKAGES, extra_package
from tests.cluster import wait_for

pytestmark = pytest.mark.cluster


def _source(kind: str, server: CatalogServer) -> dict[str, object]:
    if kind == "grpc":
        return {"type": "grpc", "grpc": {"address": server.address}}
    return {"type": "http", "http": {"url": server.url}}


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_a_stale_server_shows_in_the_catalog_status_until_it_is_fixed(
    harness: Harness, catalog_server: CatalogServer, kind: str
) -> None:
    name = harness.catalog(_source(kind, catalog_server), poll="30s")
    harness.reconciler.reconcile(name)
    good = harness.get(name)
    assert condition(good)["reason"] == REASON_FETCHED
    digest = good["status"]["contentDigest"]

    # The served directory turns malformed: the server keeps the last good catalog, says stale.
    (catalog_server.directory / "broken.yaml").write_text("schema: [unterminated\n")
    wait_for(
        lambda: catalog_server.reloader.stale_reason() is not None,
        timeout=10,
        what="the server to notice the broken file",
    )
    stale = harness.poll(name)
    serving = condition(stale)
    assert (serving["status"], serving["reason"]) == ("False", REASON_STALE), serving
    assert "serves stale content" in serving["message"]
    assert "broken.yaml" in serving["message"]  # the server's own reason
    assert digest in serving["message"]  # what keeps serving resolution
    # The content itself is still what the server serves, and resolution keeps it.
    assert stale["status"]["contentDigest"] == digest
    assert (stale["status"]["packages"], stale["status"]["bundles"]) == (
        BASE_PACKAGES,
        BASE_BUNDLES,
    )
    entry = harness.cache.get(name)
    assert entry is not None
    assert entry.digest == digest
    labels = {"catalog": name, "reason": REASON_STALE}
    assert harness.registry.get_sample_value("pivoter_catalog_poll_errors_total", labels) == 1
    # Still stale: the same status, not rewritten on every poll; polled sooner than 30s.
    assert rv(harness.poll(name)) == rv(stale)
    result = harness.reconciler.reconcile(name)
    assert result is not None
    assert (result.requeue_after or 0) < 30

    # The fix (the broken file becomes a good package): the next reload clears it everywhere.
    catalog_server.edit("broken.yaml", extra_package(), packages=BASE_PACKAGES + 1)
    wait_for(
        lambda: catalog_server.reloader.stale_reason() is None,
        timeout=10,
        what="the server to reload",
    )
    fixed = harness.poll(name)
    serving = condition(fixed)
    assert (serving["status"], serving["reason"]) == ("True", REASON_FETCHED), serving
    assert "stale" not in serving["message"]
    assert fixed["status"]["packages"] == BASE_PACKAGES + 1
    assert fixed["status"]["contentDigest"] != digest
