"""Which operators an adoption takes together (pivoter.olmv0.groups), from installed CSVs."""

from __future__ import annotations

import json
from typing import Any

from pivoter.olmv0.groups import group_of, held_back_by, partition, provides, requires
from pivoter.olmv0.survey import InstalledOperator


def _operator(
    name: str,
    *,
    owns: tuple[str, ...] = (),
    needs: tuple[str, ...] = (),
    needs_packages: tuple[str, ...] = (),
    api_owned: tuple[tuple[str, str], ...] = (),
    api_needed: tuple[tuple[str, str], ...] = (),
) -> InstalledOperator:
    properties = [
        {"type": "olm.package.required", "value": {"packageName": p, "versionRange": ">=1.0.0"}}
        for p in needs_packages
    ]
    csv: dict[str, Any] = {
        "metadata": {
            "name": f"{name}.v1.0.0",
            "annotations": {
                "operatorframework.io/properties": json.dumps({"properties": properties})
            },
        },
        "spec": {
            "version": "1.0.0",
            "customresourcedefinitions": {
                "owned": [{"name": c} for c in owns],
                "required": [{"name": c} for c in needs],
            },
            "apiservicedefinitions": {
                "owned": [{"group": g, "version": v} for g, v in api_owned],
                "required": [{"group": g, "version": v} for g, v in api_needed],
            },
        },
    }
    subscription = {
        "metadata": {"name": name, "namespace": "ops"},
        "spec": {"name": name},
        "status": {"installedCSV": f"{name}.v1.0.0"},
    }
    return InstalledOperator("ops", subscription, csv, (), ())


APP = _operator("app", owns=("apps.x.io",), needs=("dbs.y.io",))
DB = _operator("db", owns=("dbs.y.io",), needs_packages=("cache",))
CACHE = _operator("cache")
OTHER = _operator("other", owns=("others.z.io",))


def test_requirements_and_what_meets_them_come_from_the_installed_csv() -> None:
    assert requires(APP) == {"crd dbs.y.io"}
    assert provides(DB) == {"crd dbs.y.io", "package db"}
    assert requires(DB) == {"package cache"}
    metrics = _operator("metrics", api_owned=(("metrics.k8s.io", "v1beta1"),))
    reader = _operator("reader", api_needed=(("metrics.k8s.io", "v1beta1"),))
    assert requires(reader) & provides(metrics) == {"apiservice v1beta1.metrics.k8s.io"}


def test_an_operator_takes_the_closure_of_what_it_requires() -> None:
    namespace = [APP, DB, CACHE, OTHER]
    assert [o.name for o in group_of(APP, namespace)] == ["app", "cache", "db"]
    assert [o.name for o in group_of(OTHER, namespace)] == ["other"]
    assert held_back_by(group_of(APP, namespace), namespace) == []


def test_a_dependency_alone_is_held_back_by_what_still_requires_it() -> None:
    namespace = [APP, DB, CACHE]
    (reason,) = held_back_by(group_of(DB, namespace), namespace)
    assert "CSV db.v1.0.0 (Subscription db) provides crd dbs.y.io" in reason
    assert "adopt Subscription app instead (it adopts db with it)" in reason


def test_a_namespace_is_partitioned_into_groups_that_need_nothing_outside() -> None:
    groups = partition([OTHER, DB, CACHE, APP])
    assert [(p.name, [m.name for m in rest]) for p, rest in groups] == [
        ("app", ["cache", "db"]),
        ("other", []),
    ]
