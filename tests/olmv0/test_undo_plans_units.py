"""Which of OLM v0's InstallPlans tell the hand-back (pivoter.olmv0.undo, step ``Returning``) that
a re-created group is installed, without a cluster.

OLM v0 resolves a namespace at once and owns a plan by the Subscriptions that existed when it
resolved. The hand-back re-creates a dependent's Subscription and then its dependency's: when OLM
v0 resolves in between, one plan owned by the dependent's Subscription installs both CSVs, and the
dependency's Subscription owns none. Read per Subscription, the dependency waited for a plan that
never came (CI: "CSV aqua-operator.v6.5.5 (now Succeeded, its InstallPlan not yet Complete)" for
300 s). The same group on the real OLM v0 is test_adopt_group_cluster.py.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from pivoter.kube import Kube, NotFound, Object, Resource
from pivoter.olmv0 import undo
from pivoter.olmv0.resources import INSTALL_PLANS

NAMESPACE = "ops"


class Plans:
    """Subscriptions and InstallPlans in memory; approvals recorded."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Object] = {}
        self.approved: list[str] = []

    def subscription(self, name: str, uid: str) -> None:
        self.items[("Subscription", name)] = {"metadata": {"name": name, "uid": uid}}

    def plan(self, name: str, owners: list[tuple[str, str]], csvs: list[str], **spec: Any) -> None:
        phase = spec.pop("phase", "Complete")
        self.items[("InstallPlan", name)] = {
            "metadata": {
                "name": name,
                "ownerReferences": [
                    {"kind": "Subscription", "name": n, "uid": u} for n, u in owners
                ],
            },
            "spec": {"clusterServiceVersionNames": csvs, **spec},
            "status": {"phase": phase},
        }

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        try:
            return copy.deepcopy(self.items[(resource.kind, name)])
        except KeyError:
            raise NotFound(404, "NotFound", f"{resource.kind} {name}") from None

    def list(self, resource: Resource, namespace: str | None = None) -> tuple[list[Object], str]:
        return [copy.deepcopy(o) for (k, _), o in self.items.items() if k == resource.kind], "1"

    def merge_patch(
        self, resource: Resource, name: str, patch: Object, namespace: str | None = None
    ) -> Object:
        assert resource == INSTALL_PLANS
        assert patch == {"spec": {"approved": True}}
        self.items[(resource.kind, name)]["spec"]["approved"] = True
        self.approved.append(name)
        return self.get(resource, name)


def _plans(fake: Plans, *subscriptions: str) -> list[Object]:
    return undo._group_plans(cast(Kube, fake), NAMESPACE, subscriptions)


def test_a_dependency_installed_by_its_dependents_plan_is_installed() -> None:
    fake = Plans()
    fake.subscription("mercury", "u-mercury")
    fake.subscription("aqua-stable-cs", "u-aqua")
    fake.plan("install-new", [("mercury", "u-mercury")], ["mercury.v1", "aqua.v6"])
    plans = _plans(fake, "mercury", "aqua-stable-cs")
    assert undo._installed(plans, "aqua.v6")
    assert undo._installed(plans, "mercury.v1")


def test_a_plan_from_before_the_adoption_is_not_one_of_the_group() -> None:
    # Same Subscription name, another uid: the Subscription OLM v0 had before the adoption.
    fake = Plans()
    fake.subscription("mercury", "u-now")
    fake.plan("install-old", [("mercury", "u-before")], ["mercury.v1"])
    assert not undo._installed(_plans(fake, "mercury"), "mercury.v1")
    fake.plan("install-new", [("mercury", "u-now")], ["mercury.v1"], phase="Installing")
    assert not undo._installed(_plans(fake, "mercury"), "mercury.v1")
    fake.plan("install-new", [("mercury", "u-now")], ["mercury.v1"])
    assert undo._installed(_plans(fake, "mercury"), "mercury.v1")


def test_a_manual_plan_of_the_running_group_is_approved_and_no_other() -> None:
    fake = Plans()
    fake.subscription("mercury", "u-mercury")
    fake.plan("install-group", [("mercury", "u-mercury")], ["mercury.v1", "aqua.v6"])
    fake.plan("install-upgrade", [("mercury", "u-mercury")], ["mercury.v2"])
    fake.plan("install-foreign", [("other", "u-other")], ["mercury.v1"])
    for name in ("install-group", "install-upgrade", "install-foreign"):
        fake.items[("InstallPlan", name)]["spec"]["approved"] = False
    undo._approve(
        cast(Kube, fake), NAMESPACE, _plans(fake, "mercury", "aqua"), {"mercury.v1", "aqua.v6"}
    )
    assert fake.approved == ["install-group"]
