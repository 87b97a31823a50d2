"""Two input kinds requesting one package at the same moment (issue 27; issue 29 for takeovers:
both inputs taking over the same running bundle): a Resolution and a
ClusterExtension created together, before either is resolved, install the package once. The one
whose pass claims it first installs it; the other sees that pivot in progress and reports the
conflict, and never starts a pivot of its own (a second BundleDeployment of the package, in its
own namespace, would install a second copy).

"The same moment" is made exact: the test holds :data:`pivoter.inputs.held.CLAIMS` (what
every input's pass takes before it reads the others' holdings) while it creates both inputs and
until both controllers have taken them up (their finalizer is on), then lets go: both passes
then race for it. Which one gets it first is played in turn (:class:`Turns`): a Resolution in
even rounds, a ClusterExtension in odd ones, so each kind must see the other's pivot in progress.
Repeated :data:`ROUNDS` times; every round starts from nothing (the inputs of the previous one
deleted and their children gone).

The daemon's controllers run in this process with both kinds served (the ``olm`` fixture of
``tests/olmv1/conftest.py``); the package is a registry+v1 bundle of a Deployment and a ConfigMap
(no CRD), read by the Resolution from the ClusterCatalog through pivoter's catalog cache as the
ClusterExtension reads it. Each input installs into its own namespace.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from pivoter.apis.resources import (
    BUNDLE_DEPLOYMENTS,
    CLUSTER_CATALOGS,
    CLUSTER_EXTENSIONS,
    NAMESPACES,
    RESOLUTIONS,
)
from pivoter.apis.views import ANNOTATION_TAKEOVER, InstalledBundle
from pivoter.inputs import InputReconciler
from pivoter.inputs.held import CLAIMS
from pivoter.kube import NotFound, Resource
from tests.cluster import session_labels, unique_name, wait_for
from tests.olmv1.conftest import Olm, condition, olm, olm_registry, olmv1_crds, reports
from tests.olmv1.content import Bundle, Package

__all__ = ["olm", "olm_registry", "olmv1_crds"]  # the OLM v1 fixtures, used here too

pytestmark = pytest.mark.cluster

ROUNDS = 10
PACKAGE = "race"
FINALIZER = "pivoter.io/cleanup"
KINDS = ("Resolution", "ClusterExtension")
RUNNING = InstalledBundle(PACKAGE, f"{PACKAGE}.1.0.0", "1.0.0")
"""The bundle both inputs take over in a takeover round (issue 29: the race closed for
takeovers too)."""


class Turns:
    """Whose pass takes :data:`CLAIMS` first in a round: the passes of the other kind wait (up to
    a minute) until a pass of ``first`` has let go of it."""

    def __init__(self) -> None:
        self.first = ""
        self.went = threading.Event()

    def play(self, first: str) -> None:
        """Start a round in which ``first`` goes first."""
        self.first = first
        self.went.clear()


@dataclass
class Claims:
    """An engine's ``claims`` during the test: :data:`CLAIMS`, taken in :class:`Turns`."""

    turns: Turns
    kind: str

    def __enter__(self) -> None:
        if self.kind != self.turns.first:
            self.turns.went.wait(60)
        CLAIMS.acquire()

    def __exit__(self, *exc: object) -> None:
        CLAIMS.release()
        if self.kind == self.turns.first:
            self.turns.went.set()


@contextlib.contextmanager
def taking_turns(olm: Olm) -> Iterator[Turns]:
    """The Resolution and ClusterExtension engines of ``olm`` take their claims in turns."""
    assert olm.manager is not None
    turns = Turns()
    engines = {}
    for controller in olm.manager.controllers:
        reconciler = getattr(controller.reconcile, "__self__", None)
        if isinstance(reconciler, InputReconciler) and reconciler.kind.resource.kind in KINDS:
            engines[reconciler.kind.resource.kind] = reconciler.engine
    # OLM v1's controllers are wrapped (they may be set up idle, pivoter.olmv1.setup): their
    # reconciler is the product's.
    if olm.olm is not None and olm.olm.extensions is not None:
        engines["ClusterExtension"] = olm.olm.extensions.engine
    assert set(engines) == set(KINDS), engines
    for kind, engine in engines.items():
        engine.claims = Claims(turns, kind)
    try:
        yield turns
    finally:
        for engine in engines.values():
            engine.claims = CLAIMS


@dataclass
class Round:
    """What one round saw: every input that ever started a pivot or owned a child of the
    package, and how it ended."""

    first: str
    resolution: str
    extension: str
    takeover: bool = False
    """Both inputs take over what runs (adoptExisting and the takeover fact each kind has)."""
    installers: set[str] = field(default_factory=set)
    winner: str = ""

    @property
    def refs(self) -> dict[str, tuple[Resource, str]]:
        """The two inputs, ``Kind/name`` -> (resource, name), ``first``'s first."""
        refs = {
            f"Resolution/{self.resolution}": (RESOLUTIONS, self.resolution),
            f"ClusterExtension/{self.extension}": (CLUSTER_EXTENSIONS, self.extension),
        }
        return dict(sorted(refs.items(), key=lambda item: not item[0].startswith(self.first)))


def _get(olm: Olm, resource: Resource, name: str) -> dict[str, Any]:
    try:
        return olm.kube.get(resource, name)
    except NotFound:
        return {}


def _children(olm: Olm, inputs: set[str]) -> list[dict[str, Any]]:
    """The BundleDeployments of the package owned by ``inputs``."""
    found = []
    for bd in olm.kube.list(BUNDLE_DEPLOYMENTS)[0]:
        annotations = bd["metadata"].get("annotations") or {}
        ours = annotations.get("pivoter.io/input") in inputs
        if ours and annotations.get("pivoter.io/package") == PACKAGE:
            found.append(bd)
    return found


def _installed(kind: str, obj: dict[str, Any]) -> bool:
    if kind == "Resolution":
        return reports(obj, "Ready", "True")
    return reports(obj, "Installed", "True")


def _conflicted(kind: str, obj: dict[str, Any], winner: str) -> bool:
    """Whether ``obj`` reports that ``winner`` manages the package (each kind in its own words:
    a Resolution's ``Conflict`` condition, a ClusterExtension's ``Progressing`` Retrying)."""
    if kind == "Resolution":
        c = condition(obj, "Conflict")
        ok = reports(obj, "Conflict", "True", "PackageConflict")
    else:
        c = condition(obj, "Progressing")
        ok = reports(obj, "Progressing", "True", "Retrying")
    message = str(c.get("message") or "")
    return ok and f"package {PACKAGE}" in message and winner in message


def _create(olm: Olm, race: Round, install_namespace: str) -> None:
    """Create both inputs, ``race.first``'s first."""
    for ref in race.refs:
        if ref.startswith("Resolution/"):
            _create_resolution(olm, race, install_namespace)
        else:
            _create_extension(olm, race)


def _create_resolution(olm: Olm, race: Round, install_namespace: str) -> None:
    metadata: dict[str, Any] = {"name": race.resolution, "labels": session_labels()}
    spec: dict[str, Any] = {
        "packages": [{"name": PACKAGE}],
        "installNamespace": install_namespace,
        "progressDeadlineSeconds": 60,
    }
    if race.takeover:
        metadata["annotations"] = {ANNOTATION_TAKEOVER: InstalledBundle.annotation_of([RUNNING])}
        spec["adoptExisting"] = True
    olm.kube.create(
        RESOLUTIONS,
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": metadata,
            "spec": spec,
        },
    )


def _create_extension(olm: Olm, race: Round) -> None:
    annotations = '\n  annotations: {"pivoter.io/adopt-existing": "true"}' if race.takeover else ""
    olm.apply(
        f"""
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: {race.extension}{annotations}
spec:
  namespace: ${{TEST_NAMESPACE}}
  source:
    sourceType: Catalog
    catalog:
      packageName: {PACKAGE}
      selector:
        matchLabels:
          "olm.operatorframework.io/metadata.name": ${{CATALOG:test}}
"""
    )
    if race.takeover:
        # What operator-controller recorded (written while the passes wait for the claims).
        bundle = {"name": RUNNING.name, "version": RUNNING.version}
        olm.kube.patch_status(CLUSTER_EXTENSIONS, race.extension, {"install": {"bundle": bundle}})


def _play(olm: Olm, turns: Turns, race: Round, install_namespace: str) -> None:
    """Create both inputs at the same moment and watch until the round is decided: one input
    installed and the other in conflict (fills ``race.winner``), or both installing."""
    turns.play(race.first)
    with CLAIMS:
        _create(olm, race, install_namespace)

        def taken_up() -> bool:
            return all(
                FINALIZER in ((_get(olm, r, n).get("metadata") or {}).get("finalizers") or [])
                for r, n in race.refs.values()
            )

        wait_for(taken_up, timeout=60, what="both inputs taken up by their controllers")
    seen: dict[str, dict[str, Any]] = {}

    def decided() -> bool:
        for ref, (resource, name) in race.refs.items():
            seen[ref] = obj = _get(olm, resource, name)
            if (obj.get("status") or {}).get("lastAttemptedRevision"):
                race.installers.add(ref)
        for bd in _children(olm, set(race.refs)):
            race.installers.add(bd["metadata"]["annotations"]["pivoter.io/input"])
        if len(race.installers) != 1:
            return len(race.installers) > 1  # both install: decided, wrongly
        (winner,) = race.installers
        (loser,) = set(race.refs) - {winner}
        kind = winner.partition("/")[0]
        if _installed(kind, seen[winner]) and _conflicted(
            loser.partition("/")[0], seen[loser], winner
        ):
            race.winner = winner
            return True
        return False

    wait_for(
        decided,
        timeout=120,
        interval=0.2,
        what="one input installed and the other in conflict",
        detail=lambda: {ref: (obj.get("status") or {}) for ref, obj in seen.items()},
    )


def _clean(olm: Olm, race: Round) -> None:
    """Delete both inputs; wait until they and every child of the package are gone."""
    for resource, name in race.refs.values():
        with contextlib.suppress(NotFound):
            olm.kube.delete(resource, name)
    olm.extensions.clear()

    def gone() -> bool:
        inputs = [_get(olm, r, n) for r, n in race.refs.values()]
        return not any(inputs) and not _children(olm, set(race.refs))

    def left() -> dict[str, Any]:
        """What is still there, to say why it stayed."""
        found = [_get(olm, r, n) for r, n in race.refs.values()]
        found += _children(olm, set(race.refs))
        return {
            f"{o.get('kind')}/{o['metadata']['name']}": {
                "finalizers": o["metadata"].get("finalizers"),
                "deletionTimestamp": o["metadata"].get("deletionTimestamp"),
                "conditions": [
                    (c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                    for c in (o.get("status") or {}).get("conditions") or []
                ],
                "pivot": (o.get("status") or {}).get("pivot"),
            }
            for o in found
            if o
        }

    wait_for(gone, timeout=120, what="the round's inputs and children to be gone", detail=left)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("takeover", [False, True], ids=["install", "takeover"])
def test_a_resolution_and_a_cluster_extension_created_together_install_a_package_once(
    olm: Olm, takeover: bool
) -> None:
    olm.catalog("test", [Package(PACKAGE, [Bundle("1.0.0", contents=("Deployment", "ConfigMap"))])])
    olm.wait(
        lambda o: reports(o, "Serving", "True"),
        what="Serving",
        name=olm.catalogs["test"],
        resource=CLUSTER_CATALOGS,
    )
    install_namespace = unique_name("race")
    olm.kube.create(
        NAMESPACES,
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": install_namespace, "labels": session_labels()},
        },
    )
    rounds: list[Round] = []
    try:
        with taking_turns(olm) as turns:
            for number in range(ROUNDS):
                first = KINDS[number % 2]
                race = Round(
                    first, unique_name("race-res"), unique_name("race-ce"), takeover=takeover
                )
                rounds.append(race)
                try:
                    _play(olm, turns, race, install_namespace)
                finally:
                    _clean(olm, race)
    finally:
        with contextlib.suppress(NotFound):
            olm.kube.delete(NAMESPACES, install_namespace)
    twice = [(r.first, sorted(r.installers)) for r in rounds if len(r.installers) > 1]
    assert not twice, f"{len(twice)} of {ROUNDS} rounds installed the package twice: {twice}"
    # Each kind won at least once: each saw the other's pivot in progress.
    winners = [r.winner.partition("/")[0] for r in rounds]
    assert set(winners) == set(KINDS), winners
