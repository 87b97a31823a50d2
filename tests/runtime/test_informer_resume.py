"""An informer whose watch breaks resumes from the last event it applied, never from where the
broken watch began: resuming there would replay every change since, and the cache would hold
old versions of objects again (a reconcile reading it would act on them). Pure: a scripted
client stands for the API server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from pivoter.apis.resources import CONFIG_MAPS
from pivoter.kube import Unavailable
from pivoter.runtime.informer import Informer


def _cm(version: str) -> dict[str, Any]:
    return {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": version}}


class _Stream:
    def __init__(self, events: list[tuple[str, dict[str, Any]]], then: BaseException | None):
        self._events, self._then = events, then

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from self._events
        if self._then is not None:
            raise self._then

    def close(self) -> None:
        pass


class _Scripted:
    """Lists at version 10; the first watch delivers two changes and breaks."""

    def __init__(self) -> None:
        self.watched_from: list[str] = []
        self.cached_when_resumed: list[str] = []
        self.done = threading.Event()
        self.informer: Informer | None = None

    def list(self, *_args: Any, **_kwargs: Any) -> tuple[list[dict[str, Any]], str]:
        return [_cm("10")], "10"

    def watch(self, *_args: Any, resource_version: str, **_kwargs: Any) -> _Stream:
        self.watched_from.append(resource_version)
        if len(self.watched_from) == 1:
            broke = Unavailable(0, "", "Response ended prematurely")
            return _Stream([("MODIFIED", _cm("11")), ("MODIFIED", _cm("12"))], broke)
        assert self.informer is not None
        cached = self.informer.store.get("ns/a")
        self.cached_when_resumed.append(cached["metadata"]["resourceVersion"] if cached else "")
        self.done.set()
        return _Stream([], None)


def test_a_broken_watch_resumes_after_the_last_event_applied() -> None:
    api = _Scripted()
    informer = Informer(api, CONFIG_MAPS, backoff_base=0.01, backoff_cap=0.01)  # type: ignore[arg-type]
    api.informer = informer
    informer.start()
    try:
        assert api.done.wait(10)
    finally:
        informer.stop()
    assert api.watched_from[:2] == ["10", "12"]
    assert api.cached_when_resumed[0] == "12"
