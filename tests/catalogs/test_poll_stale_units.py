"""One poll of a source that says its content is stale, or that fails in a way nobody expected:
the outcome carries a problem the status reports (pure logic, a fake source)."""

from __future__ import annotations

import pytest

from pivoter.catalogs import CatalogCache
from pivoter.catalogs.errors import REASON_FETCH_FAILED, REASON_STALE, SourceStale
from pivoter.catalogs.poll import Poller
from pivoter.catalogs.sources import BuiltSource
from pivoter.kube import Unavailable
from resolver.catalog.load import load_directory
from resolver.catalog.model import Catalog
from tests.catalogs.helpers import BASE


class _Source:
    """A source with settable content, digest, stale reason, or exception."""

    def __init__(self) -> None:
        self.spec = "fake"
        self.catalog: Catalog | BaseException = load_directory(BASE, use_cache=False)
        self.stale: str | None = None
        self._digest: str | None = None

    @property
    def digest(self) -> str | None:
        return self._digest

    def fetch(self) -> Catalog:
        if isinstance(self.catalog, BaseException):
            raise self.catalog
        self._digest = "wire"
        return self.catalog


def test_stale_content_is_used_and_reported_until_the_source_recovers() -> None:
    source = _Source()
    source.stale = "serving the catalog loaded at T: cannot load: x.yaml:1: bad"
    poller = Poller("main", BuiltSource(source, "k", "HTTP http://server"))
    cache = CatalogCache()
    outcome = poller.poll(cache, 0)
    assert isinstance(outcome.problem, SourceStale)
    assert outcome.problem.reason == REASON_STALE
    assert str(outcome.problem) == f"HTTP http://server serves stale content: {source.stale}"
    assert outcome.changed  # the content is used: it is what the server serves
    assert outcome.entry is not None
    assert cache.get("main") == outcome.entry
    assert poller.failures == 1  # polled again sooner
    # unchanged content, still stale: still reported
    again = poller.poll(cache, 0)
    assert isinstance(again.problem, SourceStale)
    assert not again.changed
    # the server recovers
    source.stale = None
    recovered = poller.poll(cache, 0)
    assert recovered.problem is None
    assert poller.failures == 0


@pytest.mark.parametrize(
    "exc", [RuntimeError("a bug"), RecursionError("too deep"), MemoryError(), KeyError("k")]
)
def test_an_unexpected_exception_is_a_failed_fetch_not_a_crash(exc: BaseException) -> None:
    source = _Source()
    poller = Poller("main", BuiltSource(source, "k", "gRPC registry host:1"))
    cache = CatalogCache()
    good = poller.poll(cache, 0).entry
    source.catalog = exc
    outcome = poller.poll(cache, 0)
    assert outcome.problem is not None
    assert outcome.problem.reason == REASON_FETCH_FAILED
    message = str(outcome.problem)
    assert message.startswith("gRPC registry host:1: unexpected error while fetching")
    assert type(exc).__name__ in message
    assert outcome.entry == good  # the last good content stays


def test_an_api_server_error_is_left_to_the_controller() -> None:
    source = _Source()
    source.catalog = Unavailable(503, "", "the API server is down")
    poller = Poller("main", BuiltSource(source, "k", "ConfigMaps a"))
    with pytest.raises(Unavailable):
        poller.poll(CatalogCache(), 0)
