"""When an adoption counts OLM v0 as done writing a CSV's objects (pivoter.olmv0.quiet), from
objects in memory; the race it guards against is run against the real OLM v0 in
test_adopt_crash_cluster.py."""

from __future__ import annotations

from typing import Any, cast

from pivoter.kube import Kube, Object, Resource
from pivoter.olmv0 import quiet


class Objects:
    """The two calls observe() makes of a Kube: list by kind, namespace and label selector."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Object] = {}

    def put(self, kind: str, name: str, **meta: Any) -> None:
        labels = {"olm.owner": "op.v1.0.0", **meta.pop("labels", {})}
        self.items[(kind, name)] = {
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels, **meta}
        }

    def list(
        self, resource: Resource, namespace: str | None = None, *, label_selector: str = ""
    ) -> tuple[list[Object], str]:
        key, _, value = label_selector.partition("=")
        found = [
            o
            for (kind, _), o in self.items.items()
            if kind == resource.kind and o["metadata"]["labels"].get(key) == value
        ]
        return found, "1"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _observe(objects: Objects, clock: Clock, recorded: str | None) -> quiet.Quiet:
    return quiet.observe(cast(Kube, objects), "op.v1.0.0", "ops", recorded, now=clock)


def test_unchanged_objects_are_quiet_only_after_the_window() -> None:
    objects, clock = Objects(), Clock()
    objects.put("ConfigMap", "config", resourceVersion="5")
    first = _observe(objects, clock, None)
    assert not first.done
    clock.now += quiet.QUIET_SECONDS - 1
    assert not _observe(objects, clock, first.annotation).done
    clock.now += 1
    done = _observe(objects, clock, first.annotation)
    assert done.done
    assert done.annotation == first.annotation


def test_a_change_starts_the_window_again() -> None:
    objects, clock = Objects(), Clock()
    objects.put("ClusterRoleBinding", "binding", resourceVersion="5")
    first = _observe(objects, clock, None)
    clock.now += quiet.QUIET_SECONDS + 1
    objects.put("ClusterRoleBinding", "binding", resourceVersion="6")  # re-labelled by OLM v0
    changed = _observe(objects, clock, first.annotation)
    assert not changed.done
    assert changed.annotation != first.annotation
    clock.now += quiet.QUIET_SECONDS
    assert _observe(objects, clock, changed.annotation).done


def test_a_re_created_object_is_a_change() -> None:
    objects, clock = Objects(), Clock()
    objects.put("Service", "metrics", resourceVersion="5")
    first = _observe(objects, clock, None)
    objects.items[("Service", "metrics")]["metadata"]["uid"] = "another"
    clock.now += quiet.QUIET_SECONDS
    assert not _observe(objects, clock, first.annotation).done


def test_a_deployment_counts_by_generation_labels_and_owners_not_status() -> None:
    objects, clock = Objects(), Clock()
    objects.put("Deployment", "operator", generation=1, resourceVersion="5")
    first = _observe(objects, clock, None)
    objects.items[("Deployment", "operator")]["metadata"]["resourceVersion"] = "9"  # status
    clock.now += quiet.QUIET_SECONDS
    assert _observe(objects, clock, first.annotation).done
    objects.items[("Deployment", "operator")]["metadata"]["ownerReferences"] = [{"uid": "csv"}]
    assert not _observe(objects, clock, first.annotation).done


def test_an_unreadable_or_future_record_starts_a_new_window() -> None:
    objects, clock = Objects(), Clock()
    objects.put("ConfigMap", "config", resourceVersion="5")
    digest = _observe(objects, clock, None).annotation.split()[0]
    for recorded in ("garbage", f"{digest} soon", f"{digest} {clock.now + 3600}"):
        seen = _observe(objects, clock, recorded)
        assert not seen.done
        assert seen.annotation == f"{digest} {clock.now:.3f}"
