"""The apply order of a group: providers (of CRDs, Namespaces, required packages) first."""

from __future__ import annotations

from typing import Any

from pivoter.pivot.order import dependencies, waves
from tests.manifests import crd


def _obj(api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata}


def test_crd_and_namespace_providers_come_first() -> None:
    contents = {
        "app": [_obj("db.example.com/v1", "Database", "main", "apps")],
        "db": [crd("db.example.com", "Database")],
        "ns": [_obj("v1", "Namespace", "apps")],
    }
    assert dependencies(contents) == {"app": {"db", "ns"}, "db": set(), "ns": set()}
    assert waves(contents) == (("db", "ns"), ("app",))


def test_a_required_package_comes_first_though_no_object_shows_it() -> None:
    """An operator that needs another's API only at run time (``olm.gvk.required``) brings no
    custom resource of it: the ResolveSet's ``requires`` orders it."""
    contents = {
        "web": [_obj("apps/v1", "Deployment", "web", "web")],
        "db": [crd("db.example.com", "Database"), _obj("apps/v1", "Deployment", "db", "db")],
        "cache": [_obj("v1", "ConfigMap", "cache", "cache")],
    }
    assert waves(contents) == (("cache", "db", "web"),)
    requires = {"web": ["db"], "db": ["cache"], "cache": ["not-in-this-group"]}
    assert waves(contents, requires) == (("cache",), ("db",), ("web",))


def test_a_cycle_shares_one_wave() -> None:
    contents = {
        "a": [crd("a.example.com", "A"), _obj("b.example.com/v1", "B", "x")],
        "b": [crd("b.example.com", "B"), _obj("a.example.com/v1", "A", "y")],
        "c": [_obj("v1", "ConfigMap", "c", "default")],
    }
    assert waves(contents, {"c": ["a"]}) == (("a", "b"), ("c",))


def test_two_cycles_each_go_before_what_needs_them() -> None:
    needs_only = {p: [_obj("v1", "ConfigMap", p, "default")] for p in "abcdef"}
    requires = {"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c", "a"], "e": ["d"], "f": []}
    assert waves(needs_only, requires) == (("f",), ("a", "b"), ("c", "d"), ("e",))
