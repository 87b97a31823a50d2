"""The whole life of a Resolution, once per kind of catalog server: ``pivoter catalog serve`` over
catalogd HTTP, the same over gRPC, and the real ``opm serve`` (gRPC).

One Resolution goes through: install with a dependency pulled in; an upgrade along the channel;
Manual approval of the next one; a broken update (it passes the dry run, fails when applied)
approved and rolled back as a group; the history limit; ``pivoter rollback`` to an older
revision that stays pinned while the catalog moves on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import CATALOGS, RESOLUTIONS
from pivoter.cli.main import main
from pivoter.resolvesets import InputRef
from tests.cluster import TestCluster
from tests.inputs.broken import fails_after_dry_run
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map
from tests.wire.conftest import OpmServer

pytestmark = pytest.mark.cluster


class Served:
    """The catalog server of one run, and how a new publication reaches the Catalog."""

    def __init__(self, env: Env, kind: str, tmp: Path) -> None:
        self.env, self.kind, self.tmp = env, kind, tmp
        self.opm: OpmServer | None = None
        self.catalog = ""

    def start(self) -> None:
        """Publish and create the Catalog."""
        self.env.publish()
        if self.kind == "opm":
            self.opm = OpmServer(self.env.publisher.directory, self.tmp)
            self.catalog = self.env.catalog(protocol="grpc", address=self.opm.target)
        else:
            self.catalog = self.env.catalog(protocol=self.kind)

    def republish(self) -> None:
        """Publish again; ``opm serve`` serves what it loaded at start, so it is redeployed
        and the Catalog pointed at the new one (as a catalog image update would)."""
        self.env.publish()
        if self.opm is not None:
            self.opm.close()
            self.opm = OpmServer(self.env.publisher.directory, self.tmp)
            self.env.kube.merge_patch(
                CATALOGS, self.catalog, {"spec": {"source": {"grpc": {"address": self.opm.target}}}}
            )

    def close(self) -> None:
        """Stop ``opm serve`` (the catalog server of ``env`` stops with it)."""
        if self.opm is not None:
            self.opm.close()


@pytest.fixture(params=["http", "grpc", "opm"])
def served(request: pytest.FixtureRequest, env: Env, tmp_path: Path) -> Iterator[Served]:
    """The catalog of the test, served by the kind of server the parameter names."""
    if request.param == "opm":
        request.node.add_marker(pytest.mark.opm)
    server = Served(env, str(request.param), tmp_path)
    yield server
    server.close()


def _at(revision: int) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        return is_(obj, "Ready", "True") and obj["status"].get("activeRevision") == revision

    return check


def _versions(env: Env) -> dict[str, str | None]:
    return {p: (env.config_map_data(p) or {}).get("version") for p in ("app", "db")}


def _approve(env: Env, name: str, revision: int) -> None:
    annotations = {"pivoter.io/approved-revision": str(revision)}
    env.kube.merge_patch(RESOLUTIONS, name, {"metadata": {"annotations": annotations}})


def _pending(env: Env, name: str, revision: int) -> dict[str, Any]:
    return env.wait(
        name,
        lambda o: (
            (o["status"].get("pendingPlan") or {}).get("revision") == revision
            and "counts" in (o["status"]["pendingPlan"].get("objects") or {})
        ),
        what=f"the plan of revision {revision}",
    )


def test_the_whole_life_of_a_resolution(
    served: Served, env: Env, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = env.namespace

    def app(version: str, replaces: str = "", db: str = ">=1.0.0", extra: str = "") -> Version:
        manifests = config_map("app", ns, version=version) + (f"---\n{extra}" if extra else "")
        return Version(version, manifests, replaces, requires=(("db", db),))

    # Install: app needs db, which is pulled in.
    env.publisher.add("db", Version("1.0.0", config_map("db", ns, version="1.0.0")))
    env.publisher.add("app", app("1.0.0"))
    served.start()
    name = env.resolution([{"name": "app"}], historyLimit=3)
    obj = env.wait(name, _at(1), what="app and db installed", timeout=120)
    assert {s["package"]: s["version"] for s in obj["status"]["selection"]} == {
        "app": "1.0.0",
        "db": "1.0.0",
    }
    assert _versions(env) == {"app": "1.0.0", "db": "1.0.0"}

    # An upgrade along the channel.
    env.publisher.add("app", app("1.1.0", "1.0.0"))
    served.republish()
    env.wait(name, _at(2), what="the upgrade to app 1.1.0", timeout=120)
    assert _versions(env) == {"app": "1.1.0", "db": "1.0.0"}

    # Manual approval: the plan waits, nothing moves until revision 3 is approved.
    env.kube.merge_patch(RESOLUTIONS, name, {"spec": {"approval": "Manual"}})
    env.publisher.add("app", app("1.2.0", "1.1.0"))
    served.republish()
    plan = _pending(env, name, 3)["status"]["pendingPlan"]
    assert plan["changed"][0]["toVersion"] == "1.2.0"
    assert _versions(env)["app"] == "1.1.0"
    _approve(env, name, 3)
    env.wait(name, _at(3), what="the approved revision 3", timeout=120)
    assert _versions(env) == {"app": "1.2.0", "db": "1.0.0"}

    # A broken update of app that needs db 1.1.0 (db is requested too, so both move together):
    # approved, it fails once applied and the whole group goes back to revision 3.
    env.publisher.add("db", Version("1.1.0", config_map("db", ns, version="1.1.0"), "1.0.0"))
    env.publisher.add(
        "app", app("1.3.0", "1.2.0", db=">=1.1.0", extra=fails_after_dry_run(f"{ns}-broken"))
    )
    served.republish()
    env.kube.merge_patch(
        RESOLUTIONS, name, {"spec": {"packages": [{"name": "app"}, {"name": "db"}]}}
    )
    _pending(env, name, 4)
    _approve(env, name, 4)
    obj = env.wait(
        name,
        lambda o: is_(o, "Progressing", "False", "RolledBack"),
        what="the grouped rollback",
        timeout=150,
    )
    assert obj["status"]["pivot"]["failedBundle"] == "app.v1.3.0"
    assert obj["status"]["activeRevision"] == 3
    env.wait(name, lambda o: is_(o, "Installed", "True"), what="revision 3 running again")
    assert _versions(env) == {"app": "1.2.0", "db": "1.0.0"}

    # The history limit (3) is honoured: revision 1 is gone, the active one kept.
    numbers = [r.number for r in env.store.list(InputRef("Resolution", name))]
    assert numbers == [2, 3, 4]

    # pivoter rollback to revision 2 pins it; a newer catalog does not undo the pin.
    argv = ["rollback", name, "--to-revision", "2", "--kubeconfig", str(cluster.kubeconfig)]
    assert main([*argv, "--namespace", ns]) == 0
    capsys.readouterr()
    obj = env.wait(name, _at(2), what="the rollback to revision 2", timeout=120)
    assert is_(obj, "Resolved", "True", "Pinned")
    assert _versions(env) == {"app": "1.1.0", "db": "1.0.0"}
    env.publisher.add("app", app("1.4.0", "1.3.0", db=">=1.1.0"))
    served.republish()
    env.kube.merge_patch(
        RESOLUTIONS, name, {"metadata": {"annotations": {"test.pivoter.io/poke": "1"}}}
    )
    obj = env.wait(name, lambda o: is_(o, "Ready", "True"), what="still pinned and ready")
    assert obj["status"]["activeRevision"] == 2
    assert _versions(env) == {"app": "1.1.0", "db": "1.0.0"}
