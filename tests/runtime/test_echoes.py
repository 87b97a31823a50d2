"""The echo of a controller's own status write queues nothing; any other update does."""

from __future__ import annotations

from typing import Any

from pivoter.runtime.echoes import Echoes, merged


def _obj(version: str, *, generation: int = 1, **status: Any) -> Any:
    return {
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "Resolution",
        "metadata": {"name": "a", "resourceVersion": version, "generation": generation},
        "spec": {"packages": [{"name": "p"}]},
        "status": status,
    }


def test_merge_patches_apply_as_rfc_7386_says() -> None:
    assert merged({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"b": None, "e": 3}, "d": [2]}) == {
        "a": {"c": 2, "e": 3},
        "d": [2],
    }
    assert merged({"a": 1}, {"a": {"b": None}}) == {"a": {}}


def test_only_the_echo_of_an_own_status_write_is_ignored_and_only_once() -> None:
    echoes = Echoes()
    before = _obj("1", phase="Preparing", keep="x")
    # Noted before it is sent: the echo may arrive before the response.
    echoes.writing(before, {"phase": "Applying"})
    assert echoes.echo(before, _obj("2", phase="Applying", keep="x"))
    # Seen once: the same update again is not an echo any more.
    assert not echoes.echo(before, _obj("2", phase="Applying", keep="x"))
    # Another client's status write is a change worth a reconcile.
    assert not echoes.echo(_obj("2", phase="Applying"), _obj("3", phase="Installed"))


def test_two_writes_in_a_row_echo_in_turn_and_a_foreign_one_between_is_seen() -> None:
    echoes = Echoes()
    echoes.writing(_obj("1"), {"phase": "Applying"})
    echoes.writing(_obj("1"), {"phase": "Waiting"})
    assert echoes.echo(_obj("1"), _obj("2", phase="Applying"))
    assert not echoes.echo(_obj("2", phase="Applying"), _obj("3", phase="Applying", note="x"))
    assert echoes.echo(_obj("3", phase="Applying", note="x"), _obj("4", phase="Waiting", note="x"))


def test_an_update_of_spec_or_metadata_is_never_an_echo() -> None:
    echoes = Echoes()
    echoes.writing(_obj("4"), {"phase": "Applying"})
    # A relist folded a spec change and the own status write into one update.
    assert not echoes.echo(_obj("4", generation=1), _obj("5", generation=2, phase="Applying"))
    gone = _obj("5")
    echoes.forget(gone)
    assert not echoes.echo(_obj("4"), _obj("5", phase="Applying"))
