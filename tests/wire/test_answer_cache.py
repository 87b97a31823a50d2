"""Bundle answers kept between calls equal a fresh build; the cache stays within its bound."""

from __future__ import annotations

import threading

from pivoter.catalogserver import registry
from pivoter.catalogserver.registry import RegistryView, _AnswerCache
from resolver.catalog.load import load_directory
from tests.wire.conftest import CATALOGS, DATA


def test_cached_answers_equal_built_ones() -> None:
    for name in CATALOGS:
        view = RegistryView(load_directory(DATA / name, use_cache=False))
        for pkg in view.packages.values():
            for ch in pkg.channels.values():
                for entry in ch.entries:
                    built = view._build_api_bundle(pkg.name, ch, entry, trim=True)
                    first = view.bundle(pkg.name, ch.name, entry)
                    again = view.bundle(pkg.name, ch.name, entry)
                    assert first == built
                    assert again == built
                    untrimmed = view.bundle(pkg.name, ch.name, entry, trim=False)
                    assert untrimmed == view._build_api_bundle(pkg.name, ch, entry, trim=False)


def test_a_call_after_the_first_does_not_build_again(monkeypatch: object) -> None:
    view = RegistryView(load_directory(DATA / CATALOGS[0], use_cache=False))
    pkg = next(iter(view.packages.values()))
    ch = next(iter(pkg.channels.values()))
    builds: list[str] = []
    real = view._build_api_bundle

    def counting(*args: object, **kwargs: object) -> object:
        builds.append(str(args[2]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    view._build_api_bundle = counting  # type: ignore[method-assign]
    for _ in range(3):
        view.bundle_for_channel(pkg.name, ch.name)
    assert builds == [ch.head]


def test_the_cache_drops_the_least_recently_used_past_its_bound() -> None:
    cache = _AnswerCache(max_bytes=10)
    built: list[str] = []

    def build(text: str) -> bytes:
        built.append(text)
        return text.encode()

    assert cache.get(("a",), lambda: build("aaaa")) == b"aaaa"
    assert cache.get(("b",), lambda: build("bbbb")) == b"bbbb"
    assert cache.get(("a",), lambda: build("aaaa")) == b"aaaa"  # a hit; a is now the newest
    assert cache.get(("c",), lambda: build("cccc")) == b"cccc"  # 12 bytes: b goes
    assert cache.get(("b",), lambda: build("bbbb")) == b"bbbb"
    assert built == ["aaaa", "bbbb", "cccc", "bbbb"]
    assert cache._bytes <= 10
    assert cache.get(("big",), lambda: build("x" * 11)) == b"x" * 11  # larger than the bound
    assert ("big",) not in cache._answers


def test_concurrent_calls_agree() -> None:
    view = RegistryView(load_directory(DATA / CATALOGS[0], use_cache=False))
    pkg = next(iter(view.packages.values()))
    ch = next(iter(pkg.channels.values()))
    expected = view._build_api_bundle(pkg.name, ch, ch.head, trim=True)
    results: list[object] = []

    def call() -> None:
        for _ in range(50):
            results.append(view.bundle_for_channel(pkg.name, ch.name))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 200
    assert all(r == expected for r in results)
    assert registry.ANSWER_CACHE_BYTES > 0
