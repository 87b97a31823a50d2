"""Which inputs a catalog change concerns (:mod:`pivoter.inputs.relevance`), with the
daemon's real :class:`~pivoter.catalogs.CatalogCache` and resolver reads."""

from __future__ import annotations

from pivoter.catalogs import CatalogCache, CatalogChange
from pivoter.inputs.relevance import Relevance
from resolver.rules.reads import Reads
from tests.resolver.test_reads import BASE, _reads, _with
from tests.resolver.test_resolution_doc import bundle


def _setup() -> tuple[CatalogCache, Relevance, list[CatalogChange], list[str]]:
    cache = CatalogCache()
    relevance = Relevance(cache)
    requeued: list[str] = []
    relevance.requeue = requeued.append
    changes: list[CatalogChange] = []
    cache.on_change(changes.append)
    cache.put("main", BASE, "sha256:0", 0)
    return cache, relevance, changes, requeued


def test_a_change_concerns_only_the_inputs_that_read_what_changed() -> None:
    cache, relevance, changes, _ = _setup()
    digests = relevance.digests()
    relevance.note("app", 1, digests, _reads("app"))
    relevance.note("user", 1, digests, _reads("user"))
    cache.put("main", _with(BASE, bundle("db", "3.0.0")), "sha256:1", 0)
    assert relevance.concerned(changes[-1], ["app", "user", "new"]) == ["app", "new"]
    # "user"'s note moved on to the new digest: the next change is judged against it.
    cache.put("main", _with(BASE, bundle("db", "3.0.0"), bundle("zk", "2.0.0")), "sha256:2", 0)
    assert relevance.concerned(changes[-1], ["user"]) == ["user"]


def test_a_concerned_input_is_concerned_until_it_notes_again() -> None:
    cache, relevance, changes, _ = _setup()
    relevance.note("app", 1, relevance.digests(), _reads("app"))
    cache.put("main", _with(BASE, bundle("db", "3.0.0")), "sha256:1", 0)
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]
    cache.put("main", _with(BASE, bundle("db", "3.0.0"), bundle("zk", "2.0.0")), "sha256:2", 0)
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]


def test_a_new_spec_forgets_the_note_and_a_pass_of_the_same_spec_keeps_it() -> None:
    cache, relevance, changes, _ = _setup()
    relevance.note("user", 1, relevance.digests(), _reads("user"))
    relevance.note("app", 1, relevance.digests(), _reads("app"))
    relevance.begin("user", 2)  # its spec changed: the pass may read other packages
    relevance.begin("app", 1)  # a pass of the same spec (a pivot carried on) keeps it
    cache.put("main", _with(BASE, bundle("other", "3.0.0")), "sha256:1", 0)
    assert relevance.concerned(changes[-1], ["user", "app"]) == ["user"]


def test_a_pass_that_read_before_a_change_is_queued_again_and_not_noted() -> None:
    cache, relevance, changes, requeued = _setup()
    digests = relevance.digests()  # the pass reads the catalogs ...
    cache.put("main", _with(BASE, bundle("zk", "2.0.0")), "sha256:1", 0)
    relevance.note("app", 1, digests, _reads("app"))  # ... and notes after the change
    assert requeued == ["app"]
    cache.put("main", _with(BASE, bundle("zk", "3.0.0")), "sha256:2", 0)
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]


def test_a_catalog_that_appears_or_leaves_concerns_everyone() -> None:
    cache, relevance, changes, _ = _setup()
    relevance.note("app", 1, relevance.digests(), Reads())
    cache.put("other", BASE, "sha256:9", 0)
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]
    relevance.note("app", 1, relevance.digests(), Reads())
    cache.remove("other")
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]


def test_a_note_taken_at_another_digest_is_concerned() -> None:
    cache, relevance, changes, _ = _setup()
    relevance.note("app", 1, {"main": "sha256:old"}, Reads())
    cache.put("main", _with(BASE, bundle("zk", "2.0.0")), "sha256:1", 0)
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]


def test_held_bundles_looked_up_by_name_concern_when_they_change() -> None:
    cache, relevance, changes, _ = _setup()
    reads = Reads(bundles={("zk", "zk.v1.0.0")})
    relevance.note("app", 1, relevance.digests(), reads)
    relevance.note("db", 1, relevance.digests(), _reads("db"))
    # A new zk version: the held zk.v1.0.0 is unchanged.
    cache.put("main", _with(BASE, bundle("zk", "2.0.0")), "sha256:1", 0)
    assert relevance.concerned(changes[-1], ["app", "db"]) == []
    # zk.v1.0.0 itself removed: whoever looked it up is concerned.
    gone = _with(BASE, bundle("zk", "2.0.0"))
    gone.bundles = [b for b in gone.bundles if b.name != "zk.v1.0.0"]
    cache.put("main", gone, "sha256:2", 0)
    assert relevance.concerned(changes[-1], ["app", "db"]) == ["app"]


def test_a_new_priority_concerns_everyone() -> None:
    cache, relevance, changes, _ = _setup()
    relevance.note("app", 1, relevance.digests(), _reads("app"))
    cache.set_priority("main", 10)
    assert changes[-1].digest == changes[-1].previous
    assert relevance.concerned(changes[-1], ["app"]) == ["app"]
