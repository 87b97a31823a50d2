"""pivoter's ClusterExtension and ClusterCatalog CRDs are operator-controller's, unchanged: every
upstream field, enum, default, validation rule and printer column is there as published; the only
additions are optional ``status`` fields described ``pivoter: ...`` and the source annotation.
"""

from __future__ import annotations

from typing import Any

import pytest

from pivoter.apis import olmv1


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@pytest.mark.parametrize(
    ("plural", "factory"),
    [
        ("clusterextensions", olmv1.cluster_extension_crd),
        ("clustercatalogs", olmv1.cluster_catalog_crd),
    ],
)
def test_upstream_schema_is_kept_whole(plural: str, factory: Any) -> None:
    upstream = olmv1.upstream_crd(plural)
    ours = factory()
    # Everything but the status additions and one annotation is byte-for-byte upstream's data.
    mine = _schema(ours)
    theirs = _schema(upstream)
    added = set(mine["properties"]["status"]["properties"]) - set(
        theirs["properties"]["status"]["properties"]
    )
    for name in added:
        assert mine["properties"]["status"]["properties"][name]["description"].startswith(
            "pivoter:"
        ), name
        del mine["properties"]["status"]["properties"][name]
    assert mine == theirs
    assert ours["metadata"]["annotations"].pop(olmv1.ANNOTATION_CRD_SOURCE) == olmv1.UPSTREAM
    ours["spec"]["versions"][0]["schema"] = upstream["spec"]["versions"][0]["schema"]
    assert ours == upstream


def test_only_cluster_extension_status_gains_fields() -> None:
    ce = _schema(olmv1.cluster_extension_crd())["properties"]["status"]["properties"]
    assert set(olmv1.PIVOTER_STATUS_FIELDS) <= set(ce)
    assert {"conditions", "install", "activeRevisions"} <= set(ce)
    cc = olmv1.cluster_catalog_crd()
    assert _schema(cc) == _schema(olmv1.upstream_crd("clustercatalogs"))


def test_upstream_rules_that_matter_to_users() -> None:
    """The rules the issue names: immutability, enums, defaults, ranges and printer columns."""
    spec = _schema(olmv1.cluster_extension_crd())["properties"]["spec"]["properties"]
    rules = {r["rule"] for r in spec["namespace"]["x-kubernetes-validations"]}
    assert "self == oldSelf" in rules
    catalog = spec["source"]["properties"]["catalog"]["properties"]
    assert "self == oldSelf" in {
        r["rule"] for r in catalog["packageName"]["x-kubernetes-validations"]
    }
    assert catalog["upgradeConstraintPolicy"]["enum"] == ["CatalogProvided", "SelfCertified"]
    assert catalog["upgradeConstraintPolicy"]["default"] == "CatalogProvided"
    assert catalog["version"]["maxLength"] == 64
    assert catalog["channels"]["maxItems"] == 256
    enforcement = spec["install"]["properties"]["preflight"]["properties"]["crdUpgradeSafety"]
    assert enforcement["properties"]["enforcement"]["enum"] == ["None", "Strict"]
    assert (
        spec["progressDeadlineMinutes"]["minimum"],
        spec["progressDeadlineMinutes"]["maximum"],
    ) == (10, 720)
    columns = [
        c["name"]
        for c in olmv1.cluster_extension_crd()["spec"]["versions"][0]["additionalPrinterColumns"]
    ]
    assert columns == ["Installed Bundle", "Version", "Installed", "Progressing", "Age"]
    cc = _schema(olmv1.cluster_catalog_crd())["properties"]["spec"]["properties"]
    assert cc["availabilityMode"]["enum"] == ["Unavailable", "Available"]
    assert cc["availabilityMode"]["default"] == "Available"
    assert cc["priority"]["default"] == 0
    image = cc["source"]["properties"]["image"]
    assert image["properties"]["pollIntervalMinutes"]["minimum"] == 1
    assert any("pollIntervalMinutes" in r["message"] for r in image["x-kubernetes-validations"])
