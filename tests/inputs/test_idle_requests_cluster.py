"""An input pass with nothing to do makes no request to the API server: the Resolution, its
children, its revisions and the Catalogs are read from the daemon's informer caches
(:class:`pivoter.runtime.cachedreads.CachedReads`), and status is written only when it changes.
Counted with the daemon's own request observer, by the thread that sends each request (only the
Resolution controller's workers), on the real control plane."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest

from pivoter.apis.resources import RESOLUTIONS
from tests.cluster import wait_for
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map

pytestmark = pytest.mark.cluster


class _Passes:
    """The Resolution controller's passes that ran, and the requests its workers sent."""

    def __init__(self, env: Env) -> None:
        assert env.manager is not None
        assert env.reconciler is not None
        self.count = 0
        self.requests: collections.Counter[tuple[str, str]] = collections.Counter()
        engine = env.reconciler.engine
        run = engine.reconcile

        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                return run(*args, **kwargs)
            finally:
                self.count += 1

        engine.reconcile = counted  # type: ignore[method-assign]
        kube = env.manager.kube
        inner = kube.observer

        def observe(method: str, path: str, query: list[tuple[str, str]], code: int) -> None:
            if threading.current_thread().name.startswith("resolutions-worker"):
                self.requests[(method, path)] += 1
            if inner is not None:
                inner(method, path, query, code)

        kube.observer = observe


def _ready(obj: Mapping[str, Any]) -> bool:
    return is_(dict(obj), "Ready", "True") and obj["status"].get("activeRevision") == 1


def test_a_pass_with_nothing_to_do_makes_no_request(env: Env) -> None:
    assert env.manager is not None
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "web"}])
    env.wait(name, _ready, what="revision 1 installed")
    (controller,) = [c for c in env.manager.controllers if c.name == "resolutions"]
    passes = _Passes(env)

    def one_pass() -> dict[tuple[str, str], int]:
        passes.requests.clear()
        before = passes.count
        controller.queue.add(name)
        wait_for(lambda: passes.count > before, timeout=30, what="a pass")
        return dict(passes.requests)

    # The passes its own last writes queued may still write (once); then three in a row must
    # make no request at all.
    made = [one_pass() for _ in range(3)]
    for _ in range(5):
        if not any(made[-3:]):
            break
        made.append(one_pass())
    assert made[-3:] == [{}, {}, {}], f"requests made by passes with nothing to do: {made}"
    assert _ready(env.get(name))


def test_the_echo_of_its_own_status_write_queues_no_pass(env: Env) -> None:
    ns = env.namespace
    env.publisher.add("echo", Version("1.0.0", config_map("echo", ns, version="1.0.0")))
    env.publish()
    env.catalog()
    name = env.resolution([{"name": "echo"}])
    env.wait(name, _ready, what="revision 1 installed")
    passes = _Passes(env)
    # Settled: no pass runs by itself.
    time.sleep(2)
    settled = passes.count
    # Another writer empties the conditions: one pass writes them again, and the watch event of
    # that write (its echo) queues no second pass.
    env.kube.patch_status(RESOLUTIONS, name, {"conditions": []})
    wait_for(
        lambda: passes.count > settled and _ready(env.get(name)),
        timeout=30,
        what="the conditions written again",
    )
    time.sleep(3)
    assert passes.count == settled + 1
    assert _ready(env.get(name))
