"""Joint resolution reads the other inputs' children from the daemon's shared BundleDeployment
cache (no list from the API server per pass: one per pass made a catalog change cost n² objects
for n inputs, docs/benchmarks/daemon-scale.md) and the pivot targets of the other inputs from
the shared cache of revision ConfigMaps (no GET of each per pass), with the same holdings as
the API server gave."""

from __future__ import annotations

from typing import Any

from pivoter.inputs.held import Holding, Peers, child_package, observe, with_pivot_targets
from pivoter.inputs.targets import Ledger, pivot_targets, revision_packages
from pivoter.kube import Kube, NotFound, Resource
from pivoter.resolvesets import InputRef, Revision, RevisionStore, decode, revision_name
from pivoter.resolvesets.document import encode
from pivoter.runtime.cache import Store
from resolver.resolveset import Entry, ResolveSet


class NoAPI(Kube):
    """A client whose every request fails the test."""

    def __init__(self) -> None:
        pass

    def request(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"asked the API server: {args}")


def _bd(name: str, input_: str = "", package: str = "", *, managed: bool = True) -> Any:
    labels = {"app.kubernetes.io/managed-by": "pivoter"} if managed else {}
    annotations = (
        {
            "pivoter.io/input": input_,
            "pivoter.io/package": package,
            "pivoter.io/bundle": f"{package}.v1.0.0",
            "pivoter.io/version": "1.0.0",
        }
        if input_
        else {}
    )
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}}


def test_the_children_of_other_inputs_come_from_the_cache_without_a_request() -> None:
    cached = [
        _bd("a-web", "Resolution/a", "web"),
        _bd("b-db", "Resolution/b", "db"),
        _bd("standalone"),  # a BundleDeployment nobody's input owns
        _bd("hand-made", "Resolution/b", "cache", managed=False),  # not pivoter's child
    ]
    peers = observe(NoAPI(), InputRef("Resolution", "a"), lambda: cached)
    assert peers.holdings == (Holding("Resolution/b", "db", "db.v1.0.0", "1.0.0", child="b-db"),)
    assert "already managed by Resolution/b" in peers.conflict(["db"])
    assert peers.conflict(["web"]) == ""  # its own child is no conflict


# -- the pivot targets of the other inputs ------------------------------------------------------

SYSTEM = "pivoter-system"
TARGET = ResolveSet(
    entries=(Entry("db", "2.0.0", "db.v2.0.0", "stable", "main", "r/db:2", "core-rukpak-io-plain"),)
)


class Inputs(NoAPI):
    """Lists one Resolution, ``b``, pivoting to revision 2; nothing else."""

    def list(self, resource: Resource, *args: Any, **kwargs: Any) -> Any:
        if resource.kind != "Resolution":
            raise NotFound(404, "NotFound", "no PlatformOperators here")
        b = {"metadata": {"name": "b"}, "status": {"pivot": {"phase": "Applying", "revision": 2}}}
        return [b], "1"


class Revisions(RevisionStore):
    """A revision store that counts its reads (each would be a GET)."""

    def __init__(self) -> None:
        super().__init__(NoAPI(), SYSTEM)
        self.reads: list[tuple[str, int]] = []

    def get(self, ref: InputRef, number: int) -> Revision | None:
        self.reads.append((str(ref), number))
        return decode(encode(ref, number, TARGET, SYSTEM))


def test_pivot_targets_are_read_from_the_cache_of_revisions_when_it_holds_them() -> None:
    store = Revisions()
    cached = {
        f"{SYSTEM}/{revision_name(InputRef('Resolution', 'b'), 2)}": encode(
            InputRef("Resolution", "b"), 2, TARGET, SYSTEM
        )
    }
    peers = with_pivot_targets(
        Peers(()), Inputs(), store, InputRef("Resolution", "a"), revisions=cached.get
    )
    assert peers.holdings == (Holding("Resolution/b", "db", "db.v2.0.0", "2.0.0"),)
    assert store.reads == []
    # Not in the cache yet (written a moment ago): read from the API server.
    peers = with_pivot_targets(
        Peers(()), Inputs(), store, InputRef("Resolution", "a"), revisions={}.get
    )
    assert peers.holdings == (Holding("Resolution/b", "db", "db.v2.0.0", "2.0.0"),)
    assert store.reads == [("Resolution/b", 2)]


def _input(name: str, pivot: dict[str, Any] | None) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"pivot": pivot} if pivot else {}}


def _store(*objects: dict[str, Any]) -> Store:
    store = Store()
    for obj in objects:
        store.upsert(obj)
    return store


def test_pivots_in_progress_are_found_in_the_input_cache_and_the_ledger_covers_its_lag() -> None:
    b = InputRef("Resolution", "b")
    revision = encode(b, 2, TARGET, SYSTEM)
    revision["metadata"]["resourceVersion"] = "7"
    revisions = {f"{SYSTEM}/{revision_name(b, 2)}": revision}
    cache: dict[str, Store] = {"Resolution": _store(_input("b", None))}
    ledger = Ledger()

    def targets() -> Any:
        return pivot_targets(
            # Neither the inputs nor the revisions are read from the API server, not even the
            # kinds the daemon has no cache of (it runs no controller of them).
            NoAPI(),
            Revisions(),
            "Resolution/a",
            inputs=lambda resource: cache.get(resource.kind),
            revisions=revisions.get,
            ledger=ledger,
        )

    assert targets() == {}  # nothing pivots
    # b persisted the start of its pivot to revision 2; the cache does not show it yet.
    ledger.started(b, 2)
    assert targets() == {"Resolution/b": [("db", "db.v2.0.0", "2.0.0")]}
    # The cache caught up: the record there counts, and the ledger forgets b.
    cache["Resolution"] = _store(_input("b", {"phase": "Waiting", "revision": 2}))
    assert targets() == {"Resolution/b": [("db", "db.v2.0.0", "2.0.0")]}
    cache["Resolution"] = _store(_input("b", {"phase": "Succeeded", "revision": 2}))
    assert targets() == {}
    assert ledger.target("Resolution/b", None) is None


# -- scoped to the packages a pass can meet ----------------------------------------------------

WEB = ResolveSet(
    entries=(
        Entry("web", "1.0.0", "web.v1.0.0", "stable", "main", "r/web:1", "core-rukpak-io-plain"),
    )
)


def _revision(ref: InputRef, number: int, document: ResolveSet, version: str) -> dict[str, Any]:
    config_map = encode(ref, number, document, SYSTEM)
    config_map["metadata"]["resourceVersion"] = version
    return config_map


def test_scoped_targets_read_only_inputs_with_a_revision_of_the_packages() -> None:
    b, c = InputRef("Resolution", "b"), InputRef("Resolution", "c")
    revisions = Store()
    revisions.add_index("packages", revision_packages)
    # b pivots from web (revision 1) to db (revision 2); c pivots to web (revision 1).
    revisions.upsert(_revision(b, 1, WEB, "5"))
    revisions.upsert(_revision(b, 2, TARGET, "6"))
    revisions.upsert(_revision(c, 1, WEB, "7"))
    inputs = _store(
        _input("b", {"phase": "Applying", "revision": 2, "previous": 1}),
        _input("c", {"phase": "Applying", "revision": 1}),
    )
    looked_up: list[str] = []

    class Counting(Store):
        def get(self, key: str) -> Any:
            looked_up.append(key)
            return inputs.get(key)

    counting = Counting()
    ledger = Ledger()

    def targets(packages: set[str]) -> Any:
        return pivot_targets(
            NoAPI(),
            Revisions(),
            "Resolution/a",
            inputs=lambda resource: counting if resource.kind == "Resolution" else None,
            revisions=revisions.get,
            ledger=ledger,
            packages=packages,
            revisions_with=lambda package: revisions.by_index("packages", package),
        )

    assert targets({"db"}) == {"Resolution/b": [("db", "db.v2.0.0", "2.0.0")]}
    assert looked_up == ["b"]  # c has no revision of db: not read
    # b's target does not hold web: b pivots (its web child is on its way out), c holds web.
    assert targets({"web"}) == {
        "Resolution/b": [],
        "Resolution/c": [("web", "web.v1.0.0", "1.0.0")],
    }
    assert targets({"cache"}) == {}
    peers = with_pivot_targets(
        observe(
            NoAPI(), InputRef("Resolution", "a"), lambda: [_bd("b-web", "Resolution/b", "web")]
        ),
        NoAPI(),
        Revisions(),
        InputRef("Resolution", "a"),
        revisions=revisions.get,
        inputs=lambda resource: counting if resource.kind == "Resolution" else None,
        packages={"web"},
        revisions_with=lambda package: revisions.by_index("packages", package),
    )
    assert [h.holder for h in peers.held()] == ["Resolution c"]


def test_a_pivot_the_ledger_knows_counts_until_its_revision_is_cached_too() -> None:
    d = InputRef("Resolution", "d")
    revisions = Store()
    revisions.add_index("packages", revision_packages)
    inputs = _store(_input("d", {"phase": "Applying", "revision": 3}))
    ledger = Ledger()
    ledger.started(d, 3)
    store = Revisions()

    def targets() -> Any:
        return pivot_targets(
            NoAPI(),
            store,
            "Resolution/a",
            inputs=lambda resource: inputs if resource.kind == "Resolution" else None,
            revisions=revisions.get,
            ledger=ledger,
            packages={"db"},
            revisions_with=lambda package: revisions.by_index("packages", package),
        )

    # The input cache shows the pivot, the revisions' cache not yet its target: the ledger
    # names it (and the revision is read from the API server).
    assert targets() == {"Resolution/d": [("db", "db.v2.0.0", "2.0.0")]}
    assert store.reads == [("Resolution/d", 3)]
    assert ledger.pending() == [d]
    revisions.upsert(_revision(d, 3, TARGET, "9"))
    assert targets() == {"Resolution/d": [("db", "db.v2.0.0", "2.0.0")]}
    assert ledger.pending() == []  # both caches show it: found by the index from now on
    assert targets() == {"Resolution/d": [("db", "db.v2.0.0", "2.0.0")]}


def test_scoped_children_come_from_the_package_index() -> None:
    children = Store()
    children.add_index("package", child_package)
    for bd in (
        _bd("b-db", "Resolution/b", "db"),
        _bd("c-web", "Resolution/c", "web"),
        _bd("hand-made", "Resolution/b", "db", managed=False),
    ):
        children.upsert(bd)
    assert children.indexed("package", "db") == ["b-db"]

    def everything() -> Any:
        raise AssertionError("scanned every child")

    peers = observe(
        NoAPI(),
        InputRef("Resolution", "a"),
        everything,
        packages={"db"},
        by_package=lambda package: children.by_index("package", package),
    )
    assert peers.holdings == (Holding("Resolution/b", "db", "db.v1.0.0", "1.0.0", child="b-db"),)
