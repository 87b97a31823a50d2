"""Joint resolution reads the other inputs' children from the daemon's shared BundleDeployment
cache: no list from the API server per pass (one per pass made a catalog change cost n² objects
for n inputs, docs/benchmarks/daemon-scale.md), and the same holdings as the list gave."""

from __future__ import annotations

from typing import Any

from pivoter.kube import Kube
from pivoter.resolutions.held import Holding, observe
from pivoter.resolvesets import InputRef


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
