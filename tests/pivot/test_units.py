"""Pure logic of the grouped pivot and the input engine: child names within rukpak's limit, the
state a child's conditions mean, the persisted pivot record, revision bookkeeping, plans and
catalog selectors. No cluster (the behaviour on a cluster is in tests/inputs/)."""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.inputs import Record, from_resolution, plan, summary
from pivoter.inputs.catalogs import SelectorError, selector_string
from pivoter.pivot import (
    MAX_CHILD_NAME,
    ChildState,
    Phase,
    PivotHead,
    PivotRecord,
    UninstallableBundle,
    child_name,
    desired_child,
    state_of,
)
from pivoter.resolvesets import InputRef
from resolver.resolveset import Entry, ResolveSet


def _entry(package: str, version: str, image: str = "") -> Entry:
    return Entry(
        package=package,
        version=version,
        bundle=f"{package}.v{version}",
        channel="stable",
        catalog="main",
        image=image or f"registry.example/{package}:{version}",
        provisioner_class="core-rukpak-io-plain",
    )


# ----------------------------------------------------------------------------- names


def test_child_names_fit_rukpaks_limit_and_stay_distinct() -> None:
    ref = InputRef("Resolution", "web")
    assert child_name(ref, "db") == "web-db"
    long_input = InputRef("Resolution", "a" * 40)
    names = {child_name(long_input, p) for p in ("database-operator", "database-operator-x")}
    assert len(names) == 2
    assert all(len(n) <= MAX_CHILD_NAME for n in names)
    assert child_name(long_input, "database-operator") == child_name(
        long_input, "database-operator"
    )
    po = InputRef("PlatformOperator", "cert-manager")
    assert child_name(po, "cert-manager-operator", primary=True) == "cert-manager"
    assert len(child_name(InputRef("PlatformOperator", "p" * 56), "x", primary=True)) <= 45


def test_desired_child_installs_the_bundle_image_as_the_service_account() -> None:
    owner = {"apiVersion": "pivoter.io/v1alpha1", "metadata": {"name": "web", "uid": "u1"}}
    bd = desired_child(
        InputRef("Resolution", "web"),
        _entry("db", "1.0.0"),
        revision=3,
        owner=owner,
        service_account={"name": "installer", "namespace": "ops"},
    )
    assert bd["metadata"]["name"] == "web-db"
    assert bd["metadata"]["annotations"]["pivoter.io/revision"] == "3"
    assert bd["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert bd["spec"]["template"]["spec"]["source"] == {
        "type": "image",
        "image": {"ref": "registry.example/db:1.0.0"},
    }
    assert bd["spec"]["serviceAccount"] == {"name": "installer", "namespace": "ops"}
    with pytest.raises(UninstallableBundle, match="has no image"):
        desired_child(
            InputRef("Resolution", "web"),
            Entry("db", "1", "db.v1", "", "", "", "core-rukpak-io-plain"),
            revision=1,
            owner=owner,
        )


# ----------------------------------------------------------------------------- child state


def _bd(generation: int, *conditions: tuple[str, str, str, int]) -> dict[str, Any]:
    return {
        "metadata": {"generation": generation},
        "status": {
            "conditions": [
                {
                    "type": t,
                    "status": s,
                    "reason": r,
                    "message": f"{t} {r}",
                    "observedGeneration": g,
                }
                for t, s, r, g in conditions
            ]
        },
    }


def test_child_state_counts_only_conditions_of_the_current_generation() -> None:
    ready = _bd(
        2, ("Installed", "True", "InstallationSucceeded", 2), ("Healthy", "True", "Healthy", 2)
    )
    assert state_of(ready)[0] is ChildState.READY
    stale = _bd(
        2, ("Installed", "True", "InstallationSucceeded", 1), ("Healthy", "True", "Healthy", 1)
    )
    assert state_of(stale)[0] is ChildState.PENDING
    failed = _bd(2, ("Installed", "False", "UpgradeFailed", 2))
    assert state_of(failed)[:2] == (ChildState.FAILED, "UpgradeFailed")
    unpack = _bd(2, ("HasValidBundle", "False", "UnpackFailed", 2))
    assert state_of(unpack)[0] is ChildState.FAILED
    pending = _bd(2, ("HasValidBundle", "True", "UnpackPending", 2))
    assert state_of(pending)[0] is ChildState.UNPACK_PENDING
    sick = _bd(
        1, ("Installed", "True", "InstallationSucceeded", 1), ("Healthy", "False", "Unhealthy", 1)
    )
    assert state_of(sick)[0] is ChildState.UNHEALTHY


# ----------------------------------------------------------------------------- records


def test_pivot_record_round_trips_through_status() -> None:
    record = PivotRecord(Phase.ROLLING_BACK, 4, 2, started=1_800_000_000.0, failed_bundle="a.v2")
    assert PivotRecord.from_dict(record.to_dict()) == record
    assert PivotRecord.from_dict({"phase": "Sideways", "revision": 1}) is None
    assert PivotRecord.from_dict(None) is None
    assert Phase.ROLLED_BACK.terminal
    assert not Phase.WAITING.terminal


@pytest.mark.parametrize(
    "stored",
    [
        PivotRecord(Phase.ROLLING_BACK, 4, 2, started=1_800_000_000.0).to_dict(),
        PivotRecord(Phase.SUCCEEDED, 1, None, started=0.0).to_dict(),
        {"phase": "Sideways", "revision": 1},
        {"phase": "Applying", "revision": "x"},
        {"phase": "Applying", "revision": 3, "previousRevision": "garbled"},
        {"phase": "Applying"},
        {},
        None,
    ],
)
def test_the_head_of_a_record_reads_as_the_whole_record_does(stored: Any) -> None:
    """Other inputs' passes read only the phase and revisions (PivotHead); they must agree with
    the full record on whether there is one and what it says."""
    head = PivotHead.read(stored)
    record = PivotRecord.from_dict(stored)
    if record is None:
        assert head is None
    else:
        assert head == PivotHead(record.phase, record.revision, record.previous)


def test_record_remembers_revisions_and_backs_off() -> None:
    record = Record(active=2, last_attempted=3, last_successful=2, failures=2, failed_at=100.0)
    assert record.highest == 3
    assert record.retry_at() == 160.0
    status = record.to_status()
    assert status["activeRevision"] == 2
    again = Record.from_status({k: v for k, v in status.items() if v is not None})
    assert (again.active, again.last_attempted, again.failures) == (2, 3, 2)
    assert Record(failures=30, failed_at=0.0).retry_at() == 1800.0


def test_resolution_spec_reads_packages_and_approval() -> None:
    spec = from_resolution(
        {
            "metadata": {
                "name": "web",
                "generation": 4,
                "annotations": {"pivoter.io/approved-revision": "7"},
            },
            "spec": {
                "packages": [{"name": "db", "channel": "fast", "versionRange": "^1"}],
                "approval": "Manual",
                "autoRollback": False,
                "pinnedRevision": 3,
            },
        }
    )
    assert spec.requests[0].channels == ("fast",)
    assert spec.requests[0].version_range == "^1"
    assert spec.approves(7, "sha256:x")
    assert not spec.approves(8, "sha256:x")
    assert not spec.auto_rollback
    assert spec.pinned == 3
    assert spec.generation == 4


def test_resolution_spec_reads_install_namespace_package_config_and_adoption() -> None:
    spec = from_resolution(
        {
            "metadata": {"name": "web"},
            "spec": {
                "packages": [
                    {"name": "db", "config": {"targetNamespaces": ["team-a"]}},
                    {"name": "cache"},
                ],
                "installNamespace": "ops",
                "adoptExisting": True,
            },
        }
    )
    ref = InputRef("Resolution", "web")
    owner = {"apiVersion": "pivoter.io/v1alpha1", "metadata": {"uid": "u"}}
    db = desired_child(
        ref, _entry("db", "1.0.0"), revision=1, owner=owner, settings=spec.child_settings
    )
    cache = desired_child(
        ref, _entry("cache", "1.0.0"), revision=1, owner=owner, settings=spec.child_settings
    )
    assert db["spec"]["config"] == {"installNamespace": "ops", "targetNamespaces": ["team-a"]}
    assert cache["spec"]["config"] == {"installNamespace": "ops"}
    assert db["spec"]["adoptExisting"] is True
    plain = from_resolution({"metadata": {"name": "x"}, "spec": {"packages": [{"name": "db"}]}})
    assert plain.child_settings is None


# ----------------------------------------------------------------------------- plans, selectors


def test_plan_lists_added_changed_and_removed_bundles() -> None:
    before = ResolveSet((_entry("a", "1.0.0"), _entry("b", "1.0.0")))
    after = ResolveSet((_entry("a", "1.1.0"), _entry("c", "2.0.0")))
    data = plan(before, after, revision=5, active=4)
    assert data["added"] == [{"package": "c", "bundle": "c.v2.0.0", "version": "2.0.0"}]
    assert data["removed"] == [{"package": "b", "bundle": "b.v1.0.0", "version": "1.0.0"}]
    assert data["changed"][0]["toVersion"] == "1.1.0"
    assert summary(data) == "+c 2.0.0, a 1.0.0->1.1.0, -b 1.0.0"


def test_catalog_selector_becomes_a_label_selector() -> None:
    selector = {
        "matchLabels": {"tier": "prod"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]},
            {"key": "beta", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(selector) == "tier=prod,zone in (a,b),!beta"
    with pytest.raises(SelectorError, match="unknown operator"):
        selector_string({"matchExpressions": [{"key": "k", "operator": "Near"}]})
