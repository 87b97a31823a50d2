"""What ``pivoter adopt`` refuses, and the Resolution it writes, from OLM v0 objects in memory
(the same checks run against the real OLM v0 in test_adopt_cluster.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pivoter.olmv0 import InstalledOperator, mapping, namespace_refusals, refusals
from pivoter.olmv0.refusals import install_mode
from pivoter.olmv0.survey import NamespaceSurvey


def _csv(phase: str = "Succeeded", targets: str | None = "", **spec: Any) -> dict[str, Any]:
    annotations = {} if targets is None else {"olm.targetNamespaces": targets}
    return {
        "metadata": {"name": "op.v1.0.0", "annotations": annotations},
        "spec": {
            "version": "1.0.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": True},
                {"type": "SingleNamespace", "supported": True},
                {"type": "MultiNamespace", "supported": False},
                {"type": "AllNamespaces", "supported": True},
            ],
            **spec,
        },
        "status": {"phase": phase, "reason": "InstallCheckFailed", "message": "boom"},
    }


def _installed(
    csv: dict[str, Any] | None = None,
    *,
    groups: list[dict[str, Any]] | None = None,
    plans: list[dict[str, Any]] | None = None,
    sub_spec: dict[str, Any] | None = None,
    state: str = "AtLatestKnown",
) -> InstalledOperator:
    csv = _csv() if csv is None else csv
    return InstalledOperator(
        namespace="ops",
        subscription={
            "metadata": {"name": "op"},
            "spec": {"name": "op", "channel": "stable", **(sub_spec or {})},
            "status": {"installedCSV": "op.v1.0.0", "state": state},
        },
        csv=csv,
        operator_groups=tuple(groups if groups is not None else [{"metadata": {"name": "g"}}]),
        install_plans=tuple(plans or []),
    )


def test_a_settled_install_is_adoptable() -> None:
    assert refusals(_installed()) == []


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        (
            _installed(_csv("Failed")),
            "CSV op.v1.0.0 is in phase Failed (InstallCheckFailed: boom): pivoter would take over "
            "a broken install",
        ),
        (_installed(_csv("Installing")), "is in phase Installing, not Succeeded"),
        (
            _installed(
                plans=[
                    {
                        "metadata": {"name": "install-x"},
                        "spec": {"clusterServiceVersionNames": ["op.v1.1.0"], "approved": True},
                        "status": {"phase": "Installing"},
                    }
                ]
            ),
            "InstallPlan install-x (for op.v1.1.0) is in phase Installing: OLM v0 is in the middle",
        ),
        (_installed(state="UpgradePending"), "is in state UpgradePending"),
        (_installed(groups=[]), "namespace ops has no OperatorGroup"),
        (
            _installed(groups=[{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]),
            "namespace ops has 2 OperatorGroups (a, b)",
        ),
        (
            _installed(
                groups=[
                    {"metadata": {"name": "g"}, "spec": {"selector": {"matchLabels": {"x": "y"}}}}
                ]
            ),
            "OperatorGroup g picks its target namespaces with a label selector",
        ),
        (
            _installed(_csv(targets="team-a,team-b")),
            "OperatorGroup targets team-a, team-b (MultiNamespace), which CSV op.v1.0.0 does not "
            "support (AllNamespaces, OwnNamespace, SingleNamespace): pivoter's install mode "
            "cannot express it",
        ),
        (_installed(_csv(targets=None)), "has no olm.targetNamespaces annotation yet"),
        (
            _installed(sub_spec={"config": {"hostNetwork": True}}),
            "spec.config has hostNetwork, which pivoter's deploymentConfig does not take",
        ),
    ],
)
def test_refusals_say_why_and_what_to_do(installed: InstalledOperator, expected: str) -> None:
    found = refusals(installed)
    assert len(found) == 1, found
    assert expected in found[0]


def test_owned_apiservices_do_not_block() -> None:
    owned = [{"group": "x.io", "version": "v1", "kind": "X", "deploymentName": "op"}]
    assert refusals(_installed(_csv(apiservicedefinitions={"owned": owned}))) == []


def test_a_finished_or_failed_install_plan_does_not_block() -> None:
    plans = [
        {"metadata": {"name": "a"}, "status": {"phase": "Complete"}},
        {"metadata": {"name": "b"}, "status": {"phase": "Failed"}},
    ]
    assert refusals(_installed(plans=plans)) == []


def test_a_namespace_with_a_csv_no_subscription_installed_is_refused() -> None:
    found = NamespaceSurvey("ops", (_installed(),), ("lonely.v1",))
    assert namespace_refusals(found) == [
        "namespace ops has CSVs no Subscription installed (lonely.v1): nothing would manage "
        "them after OLM v0 lets go; delete them or give them a Subscription first"
    ]
    assert namespace_refusals(NamespaceSurvey("ops", ())) == [
        "namespace ops has no Subscription to adopt"
    ]


def test_install_modes_follow_the_targets() -> None:
    assert install_mode("ops", []) == "AllNamespaces"
    assert install_mode("ops", ["ops"]) == "OwnNamespace"
    assert install_mode("ops", ["a"]) == "SingleNamespace"
    assert install_mode("ops", ["a", "b"]) == "MultiNamespace"


def test_the_resolution_maps_the_subscription() -> None:
    installed = _installed(
        _csv(targets="team-a"),
        groups=[{"metadata": {"name": "g"}, "spec": {"serviceAccountName": "installer"}}],
        sub_spec={
            "installPlanApproval": "Manual",
            "startingCSV": "op.v0.9.0",
            "config": {"env": [{"name": "A", "value": "1"}], "selector": {}, "nodeSelector": {}},
        },
    )
    name = mapping.resolution_name("ops", "op")
    res = mapping.resolution_for(installed, name=name, adoption_step="Planning")
    assert name == "olmv0-ops-op"
    assert res["spec"] == {
        "packages": [
            {
                "name": "op",
                "channel": "stable",
                "versionRange": "1.0.0",
                "config": {
                    "targetNamespaces": ["team-a"],
                    "deploymentConfig": {"env": [{"name": "A", "value": "1"}]},
                },
            }
        ],
        "installNamespace": "ops",
        "approval": "Manual",
        "adoptExisting": True,
        "paused": True,
        "serviceAccount": {"name": "installer", "namespace": "ops"},
    }
    recorded = json.loads(res["metadata"]["annotations"][mapping.ANNOTATION_SUBSCRIPTION])
    assert recorded["spec"]["startingCSV"] == "op.v0.9.0"
    assert res["metadata"]["labels"] == {mapping.LABEL_ADOPTED_FROM: "ops"}
    long_name = mapping.resolution_name("n" * 40, "s" * 40)
    assert len(long_name) == 63


def test_a_manual_upgrade_nobody_approved_does_not_block() -> None:
    """OLM v0 does nothing with it; pivoter's next revision waits for approval instead."""
    waiting = {
        "metadata": {"name": "install-y"},
        "spec": {"clusterServiceVersionNames": ["op.v1.1.0"], "approved": False},
        "status": {"phase": "RequiresApproval"},
    }
    assert refusals(_installed(plans=[waiting], state="UpgradePending")) == []
    approved = {**waiting, "spec": {**waiting["spec"], "approved": True}}
    found = refusals(_installed(plans=[approved], state="UpgradePending"))
    assert any("approved, not yet installed" in r for r in found), found
    assert any("UpgradePending" in r for r in found), found
