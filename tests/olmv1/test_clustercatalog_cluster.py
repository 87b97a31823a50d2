"""The ClusterCatalog controller: a catalog image from the local registry unpacked and served over
catalogd's HTTP API, with catalogd's status, read by ``curl`` as operator-controller's docs show
(docs/tutorials/explore-available-content.md, docs/howto/catalog-queries.md).

Mirrors upstream's catalogd behaviour (``internal/catalogd/controllers/core``) and the docs'
tutorial "Add a catalog" (docs/tutorials/add-catalog.md, the manifest applied unchanged but for
the image reference, which points at the local registry).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from pivoter.apis.resources import CLUSTER_CATALOGS
from tests.olmv1.conftest import Olm, condition, reports
from tests.olmv1.content import Bundle, Package, push_catalog

pytestmark = pytest.mark.cluster


def _curl(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["curl", "-sS", "--compressed", "-w", "\n%{http_code}", *args, url],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _lines(result: subprocess.CompletedProcess[str]) -> tuple[int, list[dict[str, Any]]]:
    body, _, code = result.stdout.rpartition("\n")
    if int(code) != 200:
        return int(code), []
    return int(code), [json.loads(line) for line in body.splitlines() if line.strip()]


def test_add_catalog_tutorial_serves_content_read_by_curl(olm: Olm) -> None:
    """docs/tutorials/add-catalog.md: the ClusterCatalog manifest, with its image in the local
    registry; then docs/tutorials/explore-available-content.md with curl."""
    ref = push_catalog(
        olm.registry,
        olm.scenario,
        "operatorhubio",
        "latest",
        [Package("argocd", [Bundle("0.6.0", ("alpha",)), Bundle("0.7.0", ("alpha",), "0.6.0")])],
    )
    name = f"operatorhubio-{olm.scenario}"
    olm.catalogs["operatorhubio"] = name
    olm.apply(
        f"""
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: {name}
spec:
  source:
    type: Image
    image:
      ref: {ref}
      pollIntervalMinutes: 10
"""
    )
    catalog = olm.wait(
        lambda o: reports(o, "Serving", "True", "Available"),
        what="Serving",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    status = catalog["status"]
    assert (
        condition(catalog, "Serving")["message"] == "Serving desired content from resolved source"
    )
    progressing = condition(catalog, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "Succeeded")
    assert progressing["message"] == "Successfully unpacked and stored content from resolved source"
    assert status["resolvedSource"]["type"] == "Image"
    pinned = status["resolvedSource"]["image"]["ref"]
    assert pinned.startswith(ref.rsplit(":", 1)[0] + "@sha256:"), pinned
    assert status["urls"]["base"] == f"{olm.catalogd_url}/catalogs/{name}"
    assert status["lastUnpacked"].endswith("Z")
    assert catalog["metadata"]["labels"]["olm.operatorframework.io/metadata.name"] == name

    base = status["urls"]["base"]
    code, objects = _lines(_curl(f"{base}/api/v1/all"))
    assert code == 200
    assert {(o["schema"], o.get("name")) for o in objects} >= {
        ("olm.package", "argocd"),
        ("olm.bundle", "argocd.0.6.0"),
        ("olm.bundle", "argocd.0.7.0"),
    }
    # docs: curl .../api/v1/metas?schema=olm.package (the metas endpoint)
    code, packages = _lines(_curl(f"{base}/api/v1/metas?schema=olm.package"))
    assert (code, [p["name"] for p in packages]) == (200, ["argocd"])
    code, bundles = _lines(_curl(f"{base}/api/v1/metas?schema=olm.bundle&package=argocd"))
    assert sorted(b["name"] for b in bundles) == ["argocd.0.6.0", "argocd.0.7.0"]
    # the jq query of the tutorial: the channels of a package
    channels = [o["name"] for o in objects if o["schema"] == "olm.channel"]
    assert channels == ["alpha"]
    # Last-Modified / If-Modified-Since: the body is not sent again
    head = subprocess.run(
        ["curl", "-sSI", f"{base}/api/v1/all"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    modified = next(
        line.split(":", 1)[1].strip()
        for line in head.splitlines()
        if line.lower().startswith("last-modified")
    )
    code, _ = _lines(_curl(f"{base}/api/v1/all", "-H", f"If-Modified-Since: {modified}"))
    assert code == 304
    # another catalog's name is not served
    code, _ = _lines(_curl(f"{olm.catalogd_url}/catalogs/nothing-{olm.scenario}/api/v1/all"))
    assert code == 404

    # the same tag pushed again with new content: a generation change polls it now
    push_catalog(
        olm.registry,
        olm.scenario,
        "operatorhubio",
        "latest",
        [Package("argocd", [Bundle("0.6.0", ("alpha",)), Bundle("0.8.0", ("alpha",), "0.6.0")])],
    )
    olm.kube.merge_patch(
        CLUSTER_CATALOGS, name, {"spec": {"source": {"image": {"pollIntervalMinutes": 11}}}}
    )
    moved = olm.wait(
        lambda o: (
            o["status"]["resolvedSource"]["image"]["ref"] != pinned
            and reports(o, "Serving", "True")
        ),
        what="the new digest",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    assert moved["status"]["resolvedSource"]["image"]["ref"].endswith(
        moved["status"]["resolvedSource"]["image"]["ref"].rsplit("@", 1)[1]
    )
    code, objects = _lines(_curl(f"{base}/api/v1/all"))
    assert ("olm.bundle", "argocd.0.8.0") in {(o["schema"], o.get("name")) for o in objects}


def test_availability_mode_unavailable_stops_serving(olm: Olm) -> None:
    """``availabilityMode: Unavailable``: catalogd's conditions, no URLs, content withdrawn; and
    back when Available again."""
    name = olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    served = olm.wait(
        lambda o: reports(o, "Serving", "True"),
        what="Serving",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    base = served["status"]["urls"]["base"]
    assert olm.olm is not None
    olm.kube.merge_patch(CLUSTER_CATALOGS, name, {"spec": {"availabilityMode": "Unavailable"}})
    gone = olm.wait(
        lambda o: reports(o, "Serving", "False", "UserSpecifiedUnavailable"),
        what="Serving=False/UserSpecifiedUnavailable",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    assert (
        condition(gone, "Serving")["message"] == "Catalog availability mode is set to Unavailable"
    )
    assert (condition(gone, "Progressing")["status"], condition(gone, "Progressing")["reason"]) == (
        "True",
        "Succeeded",
    )
    assert "urls" not in gone["status"]
    assert "resolvedSource" not in gone["status"]
    code, _ = _lines(_curl(f"{base}/api/v1/all"))
    assert code == 404
    assert olm.olm.served.get(name) is None
    olm.kube.merge_patch(CLUSTER_CATALOGS, name, {"spec": {"availabilityMode": "Available"}})
    olm.wait(
        lambda o: reports(o, "Serving", "True"),
        what="Serving again",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    assert _lines(_curl(f"{base}/api/v1/all"))[0] == 200


def test_unpullable_image_is_retrying_with_the_reason(olm: Olm) -> None:
    """A reference with no image behind it: ``Progressing=True/Retrying`` with catalogd's
    ``source catalog content:`` prefix and no Serving condition (nothing was ever served)."""
    name = f"missing-{olm.scenario}"
    olm.catalogs["missing"] = name
    olm.apply(
        f"""
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata:
  name: {name}
spec:
  source:
    type: Image
    image:
      ref: {olm.registry.host}/e2e/nothing-here:v1
"""
    )
    failing = olm.wait(
        lambda o: reports(o, "Progressing", "True", "Retrying"),
        what="Retrying",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    message = condition(failing, "Progressing")["message"]
    assert message.startswith("source catalog content: ")
    assert "nothing-here" in message
    assert condition(failing, "Serving") == {}
