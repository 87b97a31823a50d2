"""A Resolution resolved from a catalog served by the real ``opm serve`` (gRPC): install, then an
upgrade after the catalog is redeployed with a new version."""

from __future__ import annotations

from pathlib import Path

import pytest

from pivoter.apis.resources import CATALOGS
from tests.inputs.conftest import Env, is_
from tests.inputs.helpers import Version, config_map
from tests.wire.conftest import OpmServer

pytestmark = [pytest.mark.cluster, pytest.mark.opm]


def test_install_and_upgrade_from_opm_serve(env: Env, tmp_path: Path) -> None:
    ns = env.namespace
    env.publisher.add("web", Version("1.0.0", config_map("web", ns, version="1.0.0")))
    env.publish()
    opm = OpmServer(env.publisher.directory, tmp_path)
    try:
        catalog = env.catalog(protocol="grpc", address=opm.target)
        name = env.resolution([{"name": "web"}])
        env.wait(
            name,
            lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 1,
            what="revision 1 from opm",
        )
        assert env.config_map_data("web") == {"version": "1.0.0"}
        env.publisher.add("web", Version("1.1.0", config_map("web", ns, version="1.1.0"), "1.0.0"))
        env.publish()
    finally:
        opm.close()
    # opm serves what it loaded at start: redeploy it, as a catalog image update would.
    opm = OpmServer(env.publisher.directory, tmp_path)
    try:
        env.kube.merge_patch(
            CATALOGS, catalog, {"spec": {"source": {"grpc": {"address": opm.target}}}}
        )
        obj = env.wait(
            name,
            lambda o: is_(o, "Ready", "True") and o["status"].get("activeRevision") == 2,
            what="revision 2 from the redeployed opm",
        )
        assert obj["status"]["selection"][0]["version"] == "1.1.0"
        assert env.config_map_data("web") == {"version": "1.1.0"}
    finally:
        opm.close()
