"""Pure logic of joint resolution in the daemon: which holdings become held bundles, conflicts,
shared dependencies, and which inputs a child's change re-queues (no cluster)."""

from __future__ import annotations

from typing import Any

from pivoter.catalogs import CatalogCache
from pivoter.inputs.dependents import dependents_of
from pivoter.inputs.held import Holding, Peers, described, holder_text
from pivoter.runtime.cache import Store
from resolver.catalog.model import PROP_GVK, PROP_PACKAGE, Bundle, Catalog, Property
from resolver.rules.inputs import Held, SharedChoice

DB_B = Holding("Resolution/b", "db", "db.v1.0.0", "1.0.0", child="b-db")
APP_B = Holding("Resolution/b", "app", "app.v1.0.0", "1.0.0", child="b-app")


def test_holder_text_reads_like_a_sentence() -> None:
    assert holder_text("Resolution/b") == "Resolution b"
    assert holder_text("PlatformOperator/etcd") == "PlatformOperator etcd"


def test_children_are_held_except_what_the_input_owns() -> None:
    peers = Peers((DB_B, APP_B))
    assert peers.held() == [
        Held("app.v1.0.0", "app", "1.0.0", "Resolution b"),
        Held("db.v1.0.0", "db", "1.0.0", "Resolution b"),
    ]
    assert [h.package for h in peers.held(exclude={"app"})] == ["db"]


def test_a_pivoting_input_holds_its_target_not_the_children_it_leaves() -> None:
    target = Holding("Resolution/b", "db", "db.v2.0.0", "2.0.0")
    leaving = Holding("Resolution/b", "cache", "cache.v1.0.0", "1.0.0", child="b-cache")
    peers = Peers((DB_B, APP_B, leaving, target))
    assert [(h.package, h.version) for h in peers.held()] == [("db", "2.0.0")]


def test_a_child_being_deleted_still_holds_its_package() -> None:
    deleting = Holding("Resolution/b", "db", "db.v1.0.0", "1.0.0", child="b-db", deleting=True)
    peers = Peers((deleting,))
    assert peers.held() == [Held("db.v1.0.0", "db", "1.0.0", "Resolution b (being removed)")]
    assert peers.conflict(["db"]) == ""


def test_conflict_names_the_other_input_and_its_child() -> None:
    message = Peers((DB_B,)).conflict(["db"])
    assert "package db is already managed by Resolution/b (BundleDeployment b-db)" in message
    assert Peers((DB_B,)).conflict(["web"]) == ""


def test_the_target_of_another_inputs_pivot_in_progress_is_a_conflict() -> None:
    """Issue 27: before any child of its pivot exists, another input's target already installs
    its packages, whatever the other input's kind."""
    target = Holding("ClusterExtension/ext", "db", "db.v2.0.0", "2.0.0")
    message = Peers((target,)).conflict(["web", "db"])
    assert message == (
        "package db is already managed by ClusterExtension/ext (its pivot in progress installs "
        "it); one package is managed by one input: remove it from one of them"
    )
    assert Peers((target,)).conflict(["web"]) == ""
    # A child names the other input first, with the BundleDeployment to look at.
    assert "(BundleDeployment b-db)" in Peers((target, DB_B)).conflict(["db"])


def test_shared_dependencies_name_the_providing_input() -> None:
    peers = Peers((DB_B,))
    shared = peers.shared([SharedChoice(peers.held()[0], ("web",))])
    assert [(s.package, s.version, s.provided_by, s.required_by) for s in shared] == [
        ("db", "1.0.0", "Resolution/b", ("web",))
    ]
    assert shared[0].text() == "db 1.0.0 (from Resolution/b)"


def _input(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": status}


def _child(owner: str, package: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"x-{package}",
            "annotations": {"pivoter.io/input": owner, "pivoter.io/package": package},
        }
    }


def test_a_child_change_queues_its_dependents_and_the_unsatisfiable_inputs() -> None:
    inputs = [
        _input("a", sharedDependencies=[{"package": "db", "providedBy": "Resolution/b"}]),
        _input("b"),
        # The typed fact every input kind records (a ClusterExtension has no Resolved
        # condition), not a condition's reason read back.
        _input("c", pivot={"resolution": "Unsatisfiable"}),
        _input(
            "e", conditions=[{"type": "Resolved", "status": "False", "reason": "Unsatisfiable"}]
        ),
        _input("d", sharedDependencies=[{"package": "cache", "providedBy": "Resolution/b"}]),
    ]
    store = Store()
    for obj in inputs:
        store.upsert(obj)
    mapper = dependents_of("Resolution", store)
    assert mapper(_child("Resolution/b", "db")) == ["a", "c"]
    # The owner itself is queued by its own children watch, not by this one.
    assert mapper(_child("Resolution/a", "db")) == ["c"]
    assert mapper({"metadata": {"name": "unmanaged"}}) == []


def test_held_bundles_are_described_from_the_highest_priority_catalog_that_lists_them() -> None:
    def db(api_kind: str) -> Bundle:
        api = {"group": "db.example.com", "version": "v1", "kind": api_kind}
        return Bundle(
            "db",
            "db.v1.0.0",
            "example.com/db:1",
            (
                Property(PROP_PACKAGE, {"packageName": "db", "version": "1.0.0"}),
                Property(PROP_GVK, api),
            ),
        )

    cache = CatalogCache()
    cache.put("low", Catalog(name="low", bundles=[db("Low")]), "sha256:1", priority=0)
    cache.put("high", Catalog(name="high", bundles=[db("High")]), "sha256:2", priority=10)
    held = [Held("db.v1.0.0", "db", "1.0.0", "Resolution b"), Held("x.v1", "x", "1", "b")]
    described_db, unknown = described(held, cache)
    assert [p.value["kind"] for p in described_db.properties if p.type == PROP_GVK] == ["High"]
    assert unknown == held[1]  # no catalog lists it: left as it was
