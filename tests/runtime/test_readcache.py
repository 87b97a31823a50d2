"""ReadYourWrites: the informer cache, with this process's own writes read back until the cache
has them (pure: a dict stands for the cache)."""

from __future__ import annotations

from typing import Any

from pivoter.runtime.readcache import ReadYourWrites


def _obj(version: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "a", "resourceVersion": version}, "status": status}


def test_without_writes_the_cache_is_read() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    assert reads.get("a") is cache["a"]
    assert reads.get("b") is None


def test_a_write_is_read_back_until_the_cache_has_it() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    finalized = _obj("2", step="finalizer")
    reads.wrote("a", cache["a"], finalized)
    installed = _obj("3", step="installed")
    reads.wrote("a", finalized, installed)
    assert reads.get("a") is installed  # the cache still holds version 1
    cache["a"] = _obj("2", step="finalizer")
    assert reads.get("a") is installed  # version 2 is older than ours too
    cache["a"] = _obj("3", step="installed")
    assert reads.get("a") is cache["a"]  # caught up: the cache again, the record dropped
    assert len(reads) == 0


def test_another_writer_after_ours_wins() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    reads.wrote("a", cache["a"], _obj("2", mine=True))
    cache["a"] = _obj("7", theirs=True)  # a version not in our chain: written since
    assert reads.get("a") is cache["a"]
    assert len(reads) == 0


def test_a_deleted_object_is_gone_whatever_was_written() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    reads.wrote("a", cache["a"], _obj("2"))
    del cache["a"]
    assert reads.get("a") is None
    assert len(reads) == 0


def test_a_write_on_an_older_copy_starts_a_new_chain() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    reads.wrote("a", cache["a"], _obj("2"))
    reads.wrote("a", _obj("5"), _obj("6", last=True))  # made on a copy read elsewhere
    cache["a"] = _obj("1")
    assert reads.get("a") is cache["a"]  # version 1 is not what our last write superseded
    cache["a"] = _obj("5")
    reads.wrote("a", _obj("5"), _obj("6", last=True))
    assert reads.get("a")["status"] == {"last": True}  # type: ignore[index]


def test_a_create_is_read_back_until_the_cache_holds_it() -> None:
    cache: dict[str, dict[str, Any]] = {}
    now = [0.0]
    reads = ReadYourWrites(cache.get, unseen_for=30.0, clock=lambda: now[0])
    created = _obj("5", created=True)
    reads.wrote("a", None, created)
    assert reads.get("a") is created  # not in the cache yet: ours
    assert reads.pending() == ["a"]
    cache["a"] = _obj("5", created=True)
    assert reads.get("a") is cache["a"]  # the cache has it: the record dropped
    assert reads.pending() == []


def test_a_create_the_cache_never_shows_is_forgotten() -> None:
    cache: dict[str, dict[str, Any]] = {}
    now = [0.0]
    reads = ReadYourWrites(cache.get, unseen_for=30.0, clock=lambda: now[0])
    reads.wrote("a", None, _obj("5"))
    now[0] = 29.0
    assert reads.get("a") is not None
    now[0] = 31.0  # created and deleted again before the cache saw it
    assert reads.get("a") is None
    assert len(reads) == 0


def test_an_object_updated_here_and_deleted_elsewhere_is_gone() -> None:
    cache = {"a": _obj("1")}
    reads = ReadYourWrites(cache.get)
    reads.wrote("a", cache["a"], _obj("2"))
    del cache["a"]
    assert reads.get("a") is None


def test_a_create_deleted_before_the_cache_showed_it_is_forgotten_at_once() -> None:
    cache: dict[str, dict[str, Any]] = {}
    reads = ReadYourWrites(cache.get)
    created = _obj("5")
    created["metadata"]["uid"] = "u1"
    reads.wrote("a", None, created)
    other = _obj("4")
    other["metadata"]["uid"] = "u0"  # an earlier object of that name: not ours
    reads.deleted("a", other)
    assert reads.get("a") is created
    reads.deleted("a", created)
    assert reads.get("a") is None
