"""Pure logic of the catalog controller: the cache and its change callbacks, the content digest,
poll intervals, the catalog-image label, ConfigMap catalogs, source building and one poll."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pivoter.catalogs import (
    CatalogCache,
    CatalogChange,
    ConfigMapsCatalogSource,
    FetchFailed,
    InvalidCatalog,
    Poller,
    SourceSettings,
    SourceUnavailable,
    build_source,
    catalog_source_spec,
    cluster_catalog_spec,
    configs_directory,
    content_digest,
    parse_duration,
    retry_delay,
)
from pivoter.catalogs.sources import BuiltSource
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog
from resolver.catalog.sources import CatalogSourceError
from tests.catalogs.helpers import BASE, BROKEN_CHANNEL, copy_base, extra_package


def _catalog(path: Path = BASE) -> Catalog:
    return load_directory(path, use_cache=False)


# ---------------------------------------------------------------- cache


def test_cache_fires_only_when_the_digest_changes() -> None:
    cache = CatalogCache()
    seen: list[CatalogChange] = []
    unsubscribe = cache.on_change(seen.append)
    catalog = _catalog()
    assert cache.put("main", catalog, "sha256:a", 0) is True
    assert cache.put("main", catalog, "sha256:a", 5) is False
    assert cache.get("main") == (catalog, "sha256:a", 5)
    assert cache.put("main", catalog, "sha256:b", 5) is True
    assert cache.remove("main") is True
    assert cache.remove("main") is False
    cache.put("main", catalog, "sha256:c", 5)
    cache.set_priority("main", 5)  # unchanged: no callback
    cache.set_priority("main", 7)
    assert cache.remove("main") is True
    assert seen == [
        CatalogChange("main", "sha256:a", None),
        # A new priority only: the same digest before and after.
        CatalogChange("main", "sha256:a", "sha256:a"),
        CatalogChange("main", "sha256:b", "sha256:a"),
        CatalogChange("main", None, "sha256:b"),
        CatalogChange("main", "sha256:c", None),
        CatalogChange("main", "sha256:c", "sha256:c"),
        CatalogChange("main", None, "sha256:c"),
    ]
    assert seen[2].before is catalog
    assert seen[2].after is catalog
    unsubscribe()
    cache.put("main", catalog, "sha256:d", 0)
    assert len(seen) == 7


def test_cache_unpacks_as_catalog_digest_priority_and_ranks() -> None:
    cache = CatalogCache()
    catalog = _catalog()
    cache.put("low", catalog, "sha256:1", -1)
    cache.put("high", catalog, "sha256:2", 10)
    cache.put("also-high", catalog, "sha256:3", 10)
    entry = cache.get("high")
    assert entry is not None
    got, digest, priority = entry
    assert (got, digest, priority) == (catalog, "sha256:2", 10)
    assert [name for name, _ in cache.by_priority()] == ["also-high", "high", "low"]
    cache.set_priority("low", 99)
    assert cache.by_priority()[0][0] == "low"


def test_a_failing_callback_does_not_stop_the_others() -> None:
    cache = CatalogCache()
    seen: list[str] = []

    def broken(_change: CatalogChange) -> None:
        raise RuntimeError("boom")

    cache.on_change(broken)
    cache.on_change(lambda change: seen.append(change.name))
    cache.put("main", _catalog(), "sha256:a", 0)
    assert seen == ["main"]


# ---------------------------------------------------------------- digest


def test_content_digest_ignores_file_layout_but_not_content(tmp_path: Path) -> None:
    base = content_digest(_catalog())
    assert base.startswith("sha256:")
    # the same objects split differently over files, with the files touched: same content
    copy = copy_base(tmp_path / "copy")
    (copy / "index.yaml").rename(copy / "renamed.yaml")
    assert content_digest(_catalog(copy)) == base
    (copy / "extra.yaml").write_text(extra_package())
    assert content_digest(_catalog(copy)) != base


# ---------------------------------------------------------------- intervals


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600.0), ("1h30m", 5400.0), ("2.5s", 2.5), ("500ms", 0.5), ("1h0m0s", 3600.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "m", "1d", "10m junk", "-1s"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.timeout(60)  # quadratic parsing took minutes here
@pytest.mark.parametrize("text", ["9" * 200_000 + "x", "1." + "9" * 200_000, "1h" * 100_000 + "!"])
def test_long_durations_are_refused_in_linear_time(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_retry_delay_backs_off_up_to_the_interval() -> None:
    assert [retry_delay(n, 60.0) for n in range(6)] == [60.0, 5.0, 10.0, 20.0, 40.0, 60.0]


# ---------------------------------------------------------------- image label


def test_configs_label_names_a_directory_inside_the_image() -> None:
    label = "operators.operatorframework.io.index.configs.v1"
    assert configs_directory({"config": {"Labels": {label: "/configs"}}}, "img") == "configs"
    assert configs_directory({"config": {"Labels": {label: "/a/b/"}}}, "img") == "a/b"
    # a hostile label cannot leave the image: it is resolved against the image root
    assert configs_directory({"config": {"Labels": {label: "/../../etc"}}}, "img") == "etc"
    assert configs_directory({"config": {"Labels": {label: "/"}}}, "img") == "."
    with pytest.raises(InvalidCatalog, match="not a file-based catalog image"):
        configs_directory({"config": {"Labels": {}}}, "img")
    with pytest.raises(InvalidCatalog, match="not a file-based catalog image"):
        configs_directory({"config": None}, "img")


# ---------------------------------------------------------------- ConfigMaps


def _reader(objects: dict[tuple[str, str], Mapping[str, Any]]) -> Any:
    return lambda kind, name: objects.get((kind, name))


def test_config_map_catalog_reads_every_key_as_a_file() -> None:
    text = (BASE / "index.yaml").read_text()
    config_maps = {
        ("ConfigMap", "part-1"): {"kind": "ConfigMap", "data": {"index.yaml": text}},
        ("ConfigMap", "part-2"): {"kind": "ConfigMap", "data": {"extra.yaml": extra_package()}},
    }
    source = ConfigMapsCatalogSource(["part-1", "part-2"], _reader(config_maps), name="cms")
    catalog = source.fetch()
    assert catalog.name == "cms"
    assert {p.name for p in catalog.packages} >= {"extra"}
    first = source.digest
    assert first is not None
    source.fetch()
    assert source.digest == first
    config_maps[("ConfigMap", "part-2")] = {
        "kind": "ConfigMap",
        "data": {"extra.yaml": extra_package(version="2.0.0")},
    }
    source.fetch()
    assert source.digest != first


def test_config_map_catalog_problems_name_the_config_map_and_key() -> None:
    config_maps = {("ConfigMap", "bad"): {"kind": "ConfigMap", "data": {"x.yaml": "a: [1"}}}
    with pytest.raises(InvalidCatalog, match=r"ConfigMap bad key x\.yaml"):
        ConfigMapsCatalogSource(["bad"], _reader(config_maps)).fetch()
    with pytest.raises(SourceUnavailable, match="'missing' not found"):
        ConfigMapsCatalogSource(["missing"], _reader({})).fetch()


# ---------------------------------------------------------------- building sources


def test_build_source_checks_the_spec(tmp_path: Path) -> None:
    settings = SourceSettings(workdir=tmp_path)
    read = _reader({})
    built = build_source(
        "c", {"type": "grpc", "grpc": {"address": "reg.ns.svc:50051"}}, read, settings
    )
    assert built.source.spec == "grpc://reg.ns.svc:50051"
    with pytest.raises(InvalidCatalog, match="is not host:port"):
        build_source("c", {"type": "grpc", "grpc": {"address": "no port"}}, read, settings)
    with pytest.raises(InvalidCatalog, match="not an http"):
        build_source("c", {"type": "http", "http": {"url": "ftp://x"}}, read, settings)
    with pytest.raises(SourceUnavailable, match="ConfigMap 'ca' not found"):
        build_source(
            "c",
            {"type": "http", "http": {"url": "https://x/c", "caConfigMap": {"name": "ca"}}},
            read,
            settings,
        )
    with pytest.raises(InvalidCatalog, match="is not one of"):
        build_source("c", {"type": "upload"}, read, settings)


def test_http_key_moves_with_the_token(tmp_path: Path) -> None:
    settings = SourceSettings(workdir=tmp_path)
    spec = {
        "type": "http",
        "http": {
            "url": "https://catalogd.example/catalogs/op",
            "caConfigMap": {"name": "ca"},
            "tokenSecret": {"name": "tok"},
        },
    }
    objects: dict[tuple[str, str], Mapping[str, Any]] = {
        ("ConfigMap", "ca"): {"kind": "ConfigMap", "data": {"ca.crt": "PEM"}},
        ("Secret", "tok"): {"kind": "Secret", "data": {"token": "c2VjcmV0"}},
    }
    first = build_source("c", spec, _reader(objects), settings)
    assert getattr(first.source, "token", None) == "secret"
    assert (tmp_path / "c-ca.crt").read_text() == "PEM"
    assert (tmp_path / "c-ca.crt").stat().st_mode & 0o077 == 0
    objects[("Secret", "tok")] = {"kind": "Secret", "data": {"token": "b3RoZXI="}}
    assert build_source("c", spec, _reader(objects), settings).key != first.key


def test_foreign_specs() -> None:
    source = {
        "metadata": {"name": "ops", "namespace": "olm"},
        "spec": {"sourceType": "grpc", "priority": -100},
        "status": {
            "registryService": {"serviceName": "ops", "serviceNamespace": "olm", "port": "50051"}
        },
    }
    spec = catalog_source_spec(source)
    assert spec is not None
    assert spec.source == {"type": "grpc", "grpc": {"address": "ops.olm.svc:50051"}}
    assert spec.priority == -100
    assert spec.pull_secrets == ()
    # OLM v0 pulls the catalog's bundles with spec.secrets (in the CatalogSource's namespace):
    # so does pivoter, for the images the catalog names (docs/registries.md).
    source["spec"]["secrets"] = ["redhat-pull", "", 7]
    with_secrets = catalog_source_spec(source)
    assert with_secrets is not None
    assert [(r.namespace, r.name, r.required) for r in with_secrets.pull_secrets] == [
        ("olm", "redhat-pull", False)
    ]
    assert catalog_source_spec({"metadata": {"name": "x"}, "spec": {}}) is None
    cluster_catalog = {
        "metadata": {"name": "operatorhub"},
        "spec": {"priority": 5},
        "status": {
            "urls": {"base": "https://catalogd.olmv1-system.svc/catalogs/operatorhub"},
            "resolvedSource": {"type": "Image", "image": {"ref": "quay.io/x@sha256:1"}},
        },
    }
    spec = cluster_catalog_spec(cluster_catalog, ca_config_map="catalogd-ca")
    assert spec is not None
    assert spec.source["http"]["caConfigMap"] == {"name": "catalogd-ca"}
    assert "sha256:1" in spec.identity
    assert cluster_catalog_spec({"metadata": {"name": "x"}}) is None


# ---------------------------------------------------------------- one poll


class _FakeSource:
    """A source whose content and digest the test sets."""

    def __init__(self, catalog: Catalog, digest: str) -> None:
        self.spec = "fake"
        self.catalog: Catalog | Exception = catalog
        self.next_digest = digest
        self._digest: str | None = None
        self.fetches = 0

    @property
    def digest(self) -> str | None:
        return self._digest

    def fetch(self) -> Catalog:
        self.fetches += 1
        if isinstance(self.catalog, Exception):
            raise self.catalog
        self._digest = self.next_digest
        return self.catalog


def test_poll_caches_detects_changes_and_keeps_the_last_good(tmp_path: Path) -> None:
    cache = CatalogCache()
    changes: list[CatalogChange] = []
    cache.on_change(changes.append)
    source = _FakeSource(_catalog(), "wire-1")
    poller = Poller("main", BuiltSource(source, "k", "fake source"))

    first = poller.poll(cache, 0)
    assert first.changed
    assert first.problem is None
    assert len(changes) == 1
    # same source digest: unchanged, no callback
    assert not poller.poll(cache, 0).changed
    # the source digest moves but the content is the same (e.g. re-ordered messages): no
    # content change; the new priority is a change of the ranking (the same digest)
    source.next_digest = "wire-2"
    assert not poller.poll(cache, 3).changed
    assert len(changes) == 2
    assert changes[1].digest == changes[1].previous == changes[0].digest
    entry = cache.get("main")
    assert entry is not None
    assert entry.priority == 3
    # new content: one callback
    copy = copy_base(tmp_path / "copy")
    (copy / "extra.yaml").write_text(extra_package())
    source.catalog, source.next_digest = _catalog(copy), "wire-3"
    assert poller.poll(cache, 3).changed
    assert len(changes) == 3
    good = cache.get("main")
    # an unreachable source: reported, the last good content stays
    source.catalog = CatalogSourceError("grpc://x", "server unavailable")
    outcome = poller.poll(cache, 3)
    assert isinstance(outcome.problem, FetchFailed)
    assert outcome.entry == good
    assert poller.failures == 1
    # invalid content: reported, the last good content stays, no callback
    (copy / "broken.yaml").write_text(BROKEN_CHANNEL)
    source.catalog, source.next_digest = _catalog(copy), "wire-4"
    outcome = poller.poll(cache, 3)
    assert isinstance(outcome.problem, InvalidCatalog)
    assert "extra.v9.9.9" in str(outcome.problem)
    assert cache.get("main") == good
    assert len(changes) == 3


def test_a_refused_catalog_is_not_validated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pivoter.catalogs.poll as poll_module

    copy = copy_base(tmp_path / "copy")
    (copy / "extra.yaml").write_text(extra_package())
    (copy / "broken.yaml").write_text(BROKEN_CHANNEL)
    calls: list[int] = []
    real = poll_module.validate

    def counting(catalog: Catalog) -> Any:
        calls.append(1)
        return real(catalog)

    monkeypatch.setattr(poll_module, "validate", counting)
    source = _FakeSource(_catalog(copy), "wire-1")
    poller = Poller("main", BuiltSource(source, "k", "fake source"))
    cache = CatalogCache()
    for _ in range(3):
        assert isinstance(poller.poll(cache, 0).problem, InvalidCatalog)
    assert len(calls) == 1
    assert poller.failures == 3
    assert cache.get("main") is None
