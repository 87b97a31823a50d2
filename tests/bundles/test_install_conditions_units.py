"""The BundleDeployment install's condition steps, without a cluster: what a pass waiting for
its Bundle reports, what an apply records, and the :class:`Condition` summary written over the
current conditions (in order, the transition time moving only with the status)."""

from __future__ import annotations

from typing import Any

from pivoter.apis import rukpak
from pivoter.apis.conditions import FALSE, TRUE, UNKNOWN, Condition, set_conditions
from pivoter.controllers.install import InstallResult, installed, waiting_for
from provisioners.apply.objects import ObjectRef

BUNDLE = "web-abc"


def bundle(unpacked: dict[str, Any] | None = None) -> dict[str, Any]:
    status = {"conditions": [{"type": rukpak.TYPE_UNPACKED, **unpacked}]} if unpacked else {}
    return {"metadata": {"name": BUNDLE}, "status": status}


INSTALLED_BEFORE = {"conditions": [{"type": rukpak.TYPE_INSTALLED, "status": TRUE}]}


def test_a_pending_bundle_on_a_first_install_says_nothing_isinstalled() -> None:
    assert waiting_for(bundle(), {}) == [
        Condition(
            rukpak.TYPE_HAS_VALID_BUNDLE,
            TRUE,
            rukpak.REASON_UNPACK_PENDING,
            f"Waiting for the {BUNDLE} Bundle to be unpacked",
        ),
        Condition(
            rukpak.TYPE_INSTALLED,
            UNKNOWN,
            rukpak.REASON_INSTALLATION_STATUS_UNKNOWN,
            "Nothing is installed yet: waiting for a valid bundle",
        ),
    ]


def test_a_failed_unpack_leaves_what_is_installed_alone() -> None:
    failed = bundle({"status": FALSE, "message": "image not found"})
    assert waiting_for(failed, INSTALLED_BEFORE) == [
        Condition(
            rukpak.TYPE_HAS_VALID_BUNDLE, FALSE, rukpak.REASON_UNPACK_FAILED, "image not found"
        )
    ]
    (valid,) = waiting_for(bundle({"status": FALSE}), INSTALLED_BEFORE)
    assert valid.message == f"Failed to unpack the {BUNDLE} Bundle"


def test_an_apply_moves_the_active_bundle_and_the_inventory() -> None:
    ref = ObjectRef("v1", "ConfigMap", "default", "web")
    status: dict[str, Any] = {"activeBundle": "web-old", "inventory": []}
    outcome = InstallResult(refs=[ref], applied=True, notes=["pruned 1 objects"])
    assert installed(status, BUNDLE, outcome) == [
        Condition(
            rukpak.TYPE_INSTALLED,
            TRUE,
            rukpak.REASON_INSTALLATION_SUCCEEDED,
            f"Instantiated bundle {BUNDLE} successfully (pruned 1 objects)",
        )
    ]
    assert status == {"activeBundle": BUNDLE, "inventory": [ref.as_dict()]}


def test_nothing_applied_changes_nothing() -> None:
    status: dict[str, Any] = {"activeBundle": "web-old", "inventory": []}
    assert installed(status, BUNDLE, InstallResult(refs=[], applied=False)) == []
    assert status == {"activeBundle": "web-old", "inventory": []}


def test_the_summary_updates_in_place_and_appends_in_order() -> None:
    current: list[dict[str, Any]] = [
        {
            "type": "Healthy",
            "status": TRUE,
            "reason": "Healthy",
            "message": "ok",
            "observedGeneration": 1,
            "lastTransitionTime": "2020-01-01T00:00:00Z",
        }
    ]
    set_conditions(
        current,
        [
            Condition("Installed", TRUE, "Done", "installed"),
            Condition("Healthy", TRUE, "Healthy", "still ok"),
            Condition("Drifted", FALSE, "NoDrift", "matches"),
        ],
        generation=2,
    )
    assert [(c["type"], c["message"], c["observedGeneration"]) for c in current] == [
        ("Healthy", "still ok", 2),
        ("Installed", "installed", 2),
        ("Drifted", "matches", 2),
    ]
    # The status did not change: the transition time stays.
    assert current[0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    set_conditions(current, [Condition("Healthy", FALSE, "Unhealthy", "down")], generation=3)
    assert current[0]["lastTransitionTime"] != "2020-01-01T00:00:00Z"
