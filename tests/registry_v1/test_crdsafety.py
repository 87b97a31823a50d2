"""CRD upgrade safety: each unsafe change refused with the field named, safe ones allowed,
the opt-out, and the storedVersions migration helper. Pure logic on CRD documents."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from provisioners.crdsafety import (
    OPT_OUT_ANNOTATION,
    UnsafeCRDChange,
    check_crd_upgrade,
    ensure_safe_crd_upgrade,
    stored_versions_after,
)
from provisioners.formats.registry_v1 import RegistryV1
from tests import manifests
from tests.registry_v1.helpers import bundle


def _crd(*versions: str, storage: str = "v1") -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {
                    "size": {"type": "integer", "maximum": 10},
                    "mode": {"type": "string", "enum": ["fast", "slow"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            }
        },
    }
    definition = manifests.crd(
        "example.com",
        versions=[
            manifests.crd_version(v, schema=copy.deepcopy(schema), storage=v == storage)
            for v in versions
        ],
    )
    definition["status"] = {"storedVersions": [storage]}
    return definition


def _spec(crd: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            spec: dict[str, Any] = entry["schema"]["openAPIV3Schema"]["properties"]["spec"]
            return spec
    raise KeyError(version)


def _fields(problems: list[Any]) -> list[str]:
    return [p.field for p in problems]


def test_identical_and_widening_changes_are_safe() -> None:
    old = _crd("v1")
    assert check_crd_upgrade(old, copy.deepcopy(old)) == []
    new = copy.deepcopy(old)
    _spec(new)["properties"]["colour"] = {"type": "string"}
    _spec(new)["properties"]["mode"]["enum"].append("medium")
    _spec(new)["properties"]["size"]["maximum"] = 20
    _spec(new)["required"] = []
    new["spec"]["versions"].append({**copy.deepcopy(new["spec"]["versions"][0]), "name": "v2"})
    new["spec"]["versions"][1]["storage"] = False
    assert check_crd_upgrade(old, new) == []


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda s: s["properties"].pop("mode"), ".spec.mode", "field removed"),
        (lambda s: s["required"].append("mode"), ".spec.mode", "newly required"),
        (lambda s: s["properties"]["mode"].update(enum=["fast"]), ".spec.mode", "['slow']"),
        (lambda s: s["properties"]["size"].update(type="string"), ".spec.size", "type changed"),
        (lambda s: s["properties"]["size"].update(maximum=5), ".spec.size", "maximum tightened"),
        (
            lambda s: s["properties"]["tags"]["items"].update(type="integer"),
            ".spec.tags[*]",
            "from string to integer",
        ),
        (
            lambda s: s["properties"]["tags"]["items"].update(maxLength=3),
            ".spec.tags[*]",
            "maxLength tightened",
        ),
    ],
)
def test_schema_narrowing_is_refused_with_the_field(change: Any, field: str, message: str) -> None:
    old = _crd("v1")
    new = copy.deepcopy(old)
    change(_spec(new))
    with pytest.raises(UnsafeCRDChange) as err:
        ensure_safe_crd_upgrade(old, new)
    assert [p.field for p in err.value.problems] == [field]
    assert err.value.problems[0].version == "v1"
    assert message in str(err.value)
    assert "widgets.example.com" in str(err.value)


def test_scope_change_is_refused() -> None:
    old = _crd("v1")
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert _fields(check_crd_upgrade(old, new)) == ["spec.scope"]


def test_dropping_a_stored_version_is_refused() -> None:
    old = _crd("v1", "v2", storage="v2")
    old["status"]["storedVersions"] = ["v1", "v2"]
    new = _crd("v2", storage="v2")
    problems = check_crd_upgrade(old, new, has_objects=lambda version: False)
    assert len(problems) == 1
    assert problems[0].version == "v1"
    assert "still in status.storedVersions" in problems[0].message


def test_unserving_a_version_depends_on_existing_objects() -> None:
    old = _crd("v1", "v2", storage="v2")
    new = copy.deepcopy(old)
    new["spec"]["versions"][0]["served"] = False
    asked: list[str] = []

    def has_objects(version: str) -> bool:
        asked.append(version)
        return True

    problems = check_crd_upgrade(old, new, has_objects=has_objects)
    assert asked == ["v1"]
    assert "stops serving version v1 while objects exist" in problems[0].message
    assert check_crd_upgrade(old, new, has_objects=lambda version: False) == []
    # Without a way to ask, objects are assumed to exist.
    assert "objects may exist" in check_crd_upgrade(old, new)[0].message


def test_opt_out() -> None:
    old = _crd("v1")
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert check_crd_upgrade(old, new, disabled=True) == []
    new["metadata"]["annotations"] = {OPT_OUT_ANNOTATION: "false"}
    assert check_crd_upgrade(old, new) == []


def test_stored_versions_migration() -> None:
    old = _crd("v1", "v2", storage="v2")
    old["status"]["storedVersions"] = ["v1", "v2"]
    new = _crd("v2", storage="v2")
    migrated = stored_versions_after(old, new)
    assert migrated == ["v2"]
    old["status"]["storedVersions"] = migrated
    assert check_crd_upgrade(old, new, has_objects=lambda version: False) == []
    # A new storage version is added to the list.
    assert stored_versions_after(_crd("v1"), _crd("v1", "v3", storage="v3")) == ["v1", "v3"]


def test_real_bundle_crd_against_itself_is_safe() -> None:
    objects = RegistryV1().convert(bundle("rabbitmq-messaging-topology-operator")).objects
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        storage = [v["name"] for v in crd["spec"]["versions"] if v["storage"]]
        live = {**copy.deepcopy(crd), "status": {"storedVersions": storage}}
        assert check_crd_upgrade(live, crd, has_objects=lambda version: True) == []
