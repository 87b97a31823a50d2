"""The Catalog controller on the control plane, over real servers: ``pivoter.catalogserver`` on
loopback (gRPC and HTTP) and ConfigMaps. The reconciler is driven directly with a clock the test
advances, so "a poll is due" is explicit and nothing depends on wall time."""

from __future__ import annotations

import time

import pytest

from pivoter.catalogs import REASON_FETCH_FAILED, REASON_INVALID, REASON_UNAVAILABLE
from tests.catalogs.conftest import CatalogServer, Harness, condition, rv
from tests.catalogs.helpers import BASE, BASE_BUNDLES, BASE_PACKAGES, BROKEN_CHANNEL, extra_package

pytestmark = pytest.mark.cluster


def _source(kind: str, server: CatalogServer) -> dict[str, object]:
    if kind == "grpc":
        return {"type": "grpc", "grpc": {"address": server.address}}
    return {"type": "http", "http": {"url": server.url}}


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_served_catalog_is_cached_and_changes_are_detected_once(
    harness: Harness, catalog_server: CatalogServer, kind: str
) -> None:
    name = harness.catalog(_source(kind, catalog_server), poll="30s", priority=7)
    result = harness.reconciler.reconcile(name)
    assert result is not None
    assert result.requeue_after == 30.0
    catalog = harness.get(name)
    serving = condition(catalog)
    assert serving["status"] == "True", serving
    assert serving["reason"] == "Fetched"
    assert f"{BASE_PACKAGES} packages and {BASE_BUNDLES} bundles" in serving["message"]
    status = catalog["status"]
    assert (status["packages"], status["bundles"]) == (BASE_PACKAGES, BASE_BUNDLES)
    assert status["observedGeneration"] == catalog["metadata"]["generation"]
    assert status["contentDigest"].startswith("sha256:")
    assert status["lastFetchTime"]
    assert status["lastChangeTime"]
    entry = harness.cache.get(name)
    assert entry is not None
    assert (entry.digest, entry.priority) == (status["contentDigest"], 7)
    assert len(harness.changes_of(name)) == 1  # the first content

    # not due yet: nothing is fetched, nothing written
    again = harness.reconciler.reconcile(name)
    assert again is not None
    assert 0 < (again.requeue_after or 0) <= 30.0
    # due, content unchanged: no callback, no status write
    unchanged = harness.poll(name)
    assert rv(unchanged) == rv(catalog)
    assert len(harness.changes_of(name)) == 1

    # the served catalog changes: the digest moves and the callback fires exactly once
    time.sleep(1.1)  # Last-Modified has one-second resolution (as catalogd's)
    catalog_server.edit("extra.yaml", extra_package(), packages=BASE_PACKAGES + 1)
    changed = harness.poll(name)
    assert changed["status"]["contentDigest"] != status["contentDigest"]
    assert changed["status"]["packages"] == BASE_PACKAGES + 1
    assert changed["status"]["lastChangeTime"] >= status["lastChangeTime"]
    changes = harness.changes_of(name)
    assert len(changes) == 2
    assert changes[-1].previous == status["contentDigest"]
    assert changes[-1].digest == changed["status"]["contentDigest"]
    harness.poll(name)
    assert len(harness.changes_of(name)) == 2

    def sample(metric: str, **labels: str) -> float:
        value = harness.registry.get_sample_value(metric, {"catalog": name, **labels})
        return value or 0.0

    assert sample("pivoter_catalog_polls_total", outcome="changed") == 2
    assert sample("pivoter_catalog_polls_total", outcome="unchanged") == 2
    assert sample("pivoter_catalog_poll_duration_seconds_count") == 4
    fetched = sample("pivoter_catalog_poll_bytes_total")
    # gRPC refetches the whole catalog every poll; HTTP answers an unchanged poll with a 304.
    assert fetched > 0
    harness.poll(name)
    more = sample("pivoter_catalog_poll_bytes_total") - fetched
    assert (more > 0) if kind == "grpc" else (more == 0)


def test_unreachable_source_keeps_the_last_good_content(
    harness: Harness, catalog_server: CatalogServer
) -> None:
    name = harness.catalog(_source("grpc", catalog_server))
    harness.reconciler.reconcile(name)
    good = harness.cache.get(name)
    assert good is not None
    catalog_server.close()
    failed = harness.poll(name)
    serving = condition(failed)
    assert (serving["status"], serving["reason"]) == ("False", REASON_FETCH_FAILED)
    assert catalog_server.address in serving["message"]
    assert "last good content" in serving["message"]
    assert good.digest in serving["message"]
    assert harness.cache.get(name) == good
    # still failing: the same status, not rewritten on every poll
    assert rv(harness.poll(name)) == rv(failed)
    assert len(harness.changes_of(name)) == 1
    labels = {"catalog": name, "reason": REASON_FETCH_FAILED}
    assert harness.registry.get_sample_value("pivoter_catalog_poll_errors_total", labels) == 2


def test_never_reachable_source_says_nothing_is_served(harness: Harness) -> None:
    name = harness.catalog({"type": "grpc", "grpc": {"address": "127.0.0.1:1"}})
    result = harness.reconciler.reconcile(name)
    assert result is not None
    assert result.requeue_after == 5.0  # a failing source is retried sooner than the interval
    serving = condition(harness.get(name))
    assert (serving["status"], serving["reason"]) == ("False", REASON_FETCH_FAILED)
    assert "Nothing from this catalog is available" in serving["message"]
    assert harness.cache.get(name) is None


def test_config_map_catalog(harness: Harness) -> None:
    harness.config_map("fbc-main", {"index.yaml": (BASE / "index.yaml").read_text()})
    name = harness.catalog({"type": "configMaps", "configMaps": [{"name": "fbc-main"}]})
    harness.reconciler.reconcile(name)
    first = harness.get(name)
    assert condition(first)["status"] == "True"
    assert first["status"]["packages"] == BASE_PACKAGES

    # a ConfigMap changes: the watch marks the Catalog stale; the next reconcile fetches at once
    harness.config_map(
        "fbc-main",
        {"index.yaml": (BASE / "index.yaml").read_text(), "extra.yaml": extra_package()},
    )
    harness.reconciler.invalidate(name)
    harness.reconciler.reconcile(name)
    assert harness.get(name)["status"]["packages"] == BASE_PACKAGES + 1
    assert len(harness.changes_of(name)) == 2

    # an invalid edit: Serving=False Invalid naming the defect; the last good content stays
    good = harness.cache.get(name)
    harness.config_map(
        "fbc-main",
        {
            "index.yaml": (BASE / "index.yaml").read_text(),
            "extra.yaml": extra_package(),
            "broken.yaml": BROKEN_CHANNEL,
        },
    )
    harness.reconciler.invalidate(name)
    harness.reconciler.reconcile(name)
    serving = condition(harness.get(name))
    assert (serving["status"], serving["reason"]) == ("False", REASON_INVALID)
    assert "extra.v9.9.9" in serving["message"]
    assert "last good content" in serving["message"]
    assert harness.cache.get(name) == good


def test_missing_config_map_is_unavailable_until_created(harness: Harness) -> None:
    name = harness.catalog({"type": "configMaps", "configMaps": [{"name": "later"}]})
    harness.reconciler.reconcile(name)
    serving = condition(harness.get(name))
    assert (serving["status"], serving["reason"]) == ("False", REASON_UNAVAILABLE)
    assert "'later' not found" in serving["message"]
    harness.config_map("later", {"index.yaml": extra_package()})
    harness.reconciler.invalidate(name)
    harness.reconciler.reconcile(name)
    assert condition(harness.get(name))["status"] == "True"


def test_spec_change_polls_at_once_and_updates_priority(
    harness: Harness, catalog_server: CatalogServer
) -> None:
    name = harness.catalog(_source("grpc", catalog_server), priority=1)
    harness.reconciler.reconcile(name)
    harness.kube.merge_patch(
        harness.reconciler_resource(), name, {"spec": {"priority": 50, "pollInterval": "1h"}}
    )
    result = harness.reconciler.reconcile(name)
    assert result is not None
    assert result.requeue_after == 3600.0
    entry = harness.cache.get(name)
    assert entry is not None
    assert entry.priority == 50
    # The content did not change; the new priority is reported as a change of the same digest
    # (the ranking of the catalogs changed: the resolution controllers queue every input).
    first, second = harness.changes_of(name)
    assert first.previous is None
    assert second.digest == second.previous == first.digest
    catalog = harness.get(name)
    assert catalog["status"]["observedGeneration"] == catalog["metadata"]["generation"]


def test_deleted_catalog_leaves_the_cache(harness: Harness, catalog_server: CatalogServer) -> None:
    name = harness.catalog(_source("http", catalog_server))
    harness.reconciler.reconcile(name)
    assert harness.cache.get(name) is not None
    harness.kube.delete(harness.reconciler_resource(), name)
    assert harness.reconciler.reconcile(name) is None
    assert harness.cache.get(name) is None
    assert harness.changes_of(name)[-1].digest is None
