"""The resolver's index shares each catalog's candidates between resolutions (kept with the
catalog, keyed by the source's settings) and answers exactly as one built from scratch."""

from __future__ import annotations

import pickle
from typing import Any

from resolver.catalog.load import load_objects
from resolver.catalog.model import Catalog, Origin
from resolver.rules.inputs import CatalogInput, Index


def _catalog(name: str, packages: dict[str, list[str]]) -> Catalog:
    objects: list[dict[str, Any]] = []
    for package, versions in packages.items():
        objects.append({"schema": "olm.package", "name": package, "defaultChannel": "stable"})
        objects.append(
            {
                "schema": "olm.channel",
                "package": package,
                "name": "stable",
                "entries": [{"name": f"{package}.v{v}"} for v in versions],
            }
        )
        for version in versions:
            value = {"packageName": package, "version": version}
            objects.append(
                {
                    "schema": "olm.bundle",
                    "name": f"{package}.v{version}",
                    "package": package,
                    "image": f"example.com/{package}:{version}",
                    "properties": [{"type": "olm.package", "value": value}],
                }
            )
    return load_objects(((o, Origin("catalog.json", 0)) for o in objects), name=name)


def test_a_catalog_is_indexed_once_for_the_same_source_settings() -> None:
    catalog = _catalog("a", {"foo": ["1.0.0", "1.1.0"]})
    first = Index([CatalogInput("a", catalog, priority=5)])
    again = Index([CatalogInput("a", catalog, priority=5)])  # a new source object, same settings
    assert [id(c) for c in again.candidates("foo")] == [id(c) for c in first.candidates("foo")]
    other = Index([CatalogInput("a", catalog, priority=7)])
    assert [c.source.priority for c in other.candidates("foo")] == [7, 7]
    assert [c.source.priority for c in first.candidates("foo")] == [5, 5]


def test_several_catalogs_keep_catalog_name_then_bundle_name_order() -> None:
    b = _catalog("b", {"foo": ["2.0.0"], "bar": ["1.0.0"]})
    a = _catalog("a", {"foo": ["1.0.0", "0.9.0"]})
    for _ in range(2):  # the second time from the shared parts
        index = Index([CatalogInput("b", b), CatalogInput("a", a)])
        assert [(c.catalog, c.name) for c in index.candidates("foo")] == [
            ("a", "foo.v0.9.0"),
            ("a", "foo.v1.0.0"),
            ("b", "foo.v2.0.0"),
        ]
        assert [c.name for c in index.all()] == [
            "bar.v1.0.0",
            "foo.v0.9.0",
            "foo.v1.0.0",
            "foo.v2.0.0",
        ]
        assert index.default_channel == {
            ("a", "foo"): "stable",
            ("b", "foo"): "stable",
            ("b", "bar"): "stable",
        }
    alone = Index([CatalogInput("a", a)])
    assert [c.name for c in alone.candidates("foo")] == ["foo.v0.9.0", "foo.v1.0.0"]
    assert alone.candidates("bar") == []


def test_an_unavailable_catalog_adds_nothing_and_the_memo_is_not_pickled() -> None:
    catalog = _catalog("a", {"foo": ["1.0.0"]})
    index = Index([CatalogInput("a", catalog, available=False)])
    assert index.candidates("foo") == []
    Index([CatalogInput("a", catalog)])
    assert catalog.memo
    copy = pickle.loads(pickle.dumps(catalog))
    assert copy.memo == {}
    assert copy == catalog
