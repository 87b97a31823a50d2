"""What pivoter adds to OLM v1's ClusterExtension, each behind an opt-in annotation (no upstream
field changes meaning): dependencies resolved and installed in the same group, a grouped pivot
that rolls the whole group back, Manual approval over a stored plan (``pivoter plan`` and
``pivoter approve``), history and ``pivoter rollback`` / ``unpin``; and package and API uniqueness
across ClusterExtensions, Resolutions and PlatformOperators together.

OLM v1 refuses the same dependency bundle (``validating bundle ...: ... has a dependency declared
via property "olm.gvk.required" which is currently not supported``): that is checked first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS, CLUSTER_CATALOGS, RESOLUTIONS
from pivoter.cli.main import main
from pivoter.kube import NotFound
from tests.cluster import TestCluster, session_labels, unique_name, wait_for
from tests.olmv1.conftest import Olm, condition, reports
from tests.olmv1.content import Bundle, Package, group_of, push_catalog
from tests.olmv1.test_install_update_cluster import CE

pytestmark = pytest.mark.cluster


def _app_requires_db(scenario: str) -> tuple[tuple[str, Any], ...]:
    return (("olm.gvk.required", {"group": group_of(scenario), "version": "v1", "kind": "DbTest"}),)


def _v1(scenario: str) -> list[Package]:
    return [
        Package("db", [Bundle("1.0.0")]),
        Package("app", [Bundle("1.0.0", properties=_app_requires_db(scenario))]),
    ]


def _v2(scenario: str) -> list[Package]:
    """db 1.1.0, and app 1.1.0 that needs it and changes its CRD unsafely (integer -> string):
    app's upgrade passes the group's dry run and fails when applied."""
    needs = (("olm.package.required", {"packageName": "db", "versionRange": ">=1.1.0"}),)
    return [
        Package("db", [Bundle("1.0.0"), Bundle("1.1.0", replaces="1.0.0")]),
        Package(
            "app",
            [
                Bundle("1.0.0", properties=_app_requires_db(scenario)),
                Bundle(
                    "1.1.0",
                    replaces="1.0.0",
                    properties=_app_requires_db(scenario) + needs,
                    crd_field_type="string",
                ),
            ],
        ),
    ]


def _children(olm: Olm, name: str = "") -> dict[str, dict[str, Any]]:
    owner = f"ClusterExtension/{name or olm.name}"
    return {
        (bd["metadata"]["annotations"] or {})["pivoter.io/package"]: bd
        for bd in olm.kube.list(BUNDLE_DEPLOYMENTS)[0]
        if (bd["metadata"].get("annotations") or {}).get("pivoter.io/input") == owner
    }


def _versions(olm: Olm) -> dict[str, str]:
    return {
        p: bd["metadata"]["annotations"]["pivoter.io/version"] for p, bd in _children(olm).items()
    }


def _db_configmap(olm: Olm) -> str:
    cm = olm.kube.get(
        olm.kube.resource("v1", "ConfigMap"),
        f"test-configmap-{olm.scenario}-db",
        olm.test_namespace,
    )
    return str(cm["data"]["version"])


APP = CE.replace("${PACKAGE:test}", "app")


def with_annotations(manifest: str, **annotations: str) -> str:
    """The manifest with pivoter's opt-in annotations."""
    lines = "".join(f'\n    {k}: "{v}"' for k, v in annotations.items())
    return manifest.replace("  name: ${NAME}\n", f"  name: ${{NAME}}\n  annotations:{lines}\n", 1)


def test_olm_v1_refuses_a_dependency_pivoter_installs_it_with_the_group(olm: Olm) -> None:
    olm.catalog("test", _v1(olm.scenario))
    olm.apply(APP)
    olm.reports(
        "Progressing",
        "True",
        "Retrying",
        'validating bundle "app.1.0.0": bundle "app.1.0.0" has a dependency declared via property '
        '"olm.gvk.required" which is currently not supported',
        exact=True,
    )
    assert _children(olm) == {}
    # the opt-in: the provider of the API is resolved and installed in the same group
    olm.apply(with_annotations(APP, **{"pivoter.io/dependencies": "Install"}))
    olm.bundle_installed("app.1.0.0", "1.0.0")
    ce = olm.rolled_out()
    assert {(e["package"], e["version"]) for e in ce["status"]["selection"]} == {
        ("app", "1.0.0"),
        ("db", "1.0.0"),
    }
    assert next(e for e in ce["status"]["selection"] if e["package"] == "app")["requires"] == ["db"]
    assert _versions(olm) == {"app": "1.0.0", "db": "1.0.0"}
    assert _db_configmap(olm) == "1.0.0"
    assert ce["status"]["pivot"]["waves"] == [["db"], ["app"]]


def test_a_broken_upgrade_rolls_the_whole_group_back(olm: Olm) -> None:
    olm.catalog("test", _v1(olm.scenario))
    olm.apply(
        with_annotations(
            APP, **{"pivoter.io/dependencies": "Install", "pivoter.io/auto-rollback": "true"}
        )
    )
    olm.bundle_installed("app.1.0.0", "1.0.0")
    olm.rolled_out()
    ref = push_catalog(olm.registry, olm.scenario, "test", "v2", _v2(olm.scenario))
    olm.kube.merge_patch(
        CLUSTER_CATALOGS, olm.catalogs["test"], {"spec": {"source": {"image": {"ref": ref}}}}
    )
    # pivoter keeps installed dependencies where they are unless the request needs them to move:
    # asking for app >=1.1.0 moves db to 1.1.0 in the same group.
    olm.apply(
        with_annotations(
            APP.rstrip("\n") + '\n      version: ">=1.1.0"\n',
            **{"pivoter.io/dependencies": "Install", "pivoter.io/auto-rollback": "true"},
        )
    )
    ce = olm.wait(
        lambda o: (
            (o["status"].get("pivot") or {}).get("phase") == "RolledBack"
            and reports(o, "Progressing", "True", "Retrying")
        ),
        what="the group rolled back",
        timeout=180,
    )
    progressing = condition(ce, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "Retrying")
    assert "every bundle was reverted to revision 1" in progressing["message"]
    assert "app.1.1.0" in progressing["message"]
    assert "UpgradeFailed" in progressing["message"]
    # db had moved to 1.1.0 in the first wave: it is back at 1.0.0 with app
    assert ce["status"]["install"]["bundle"] == {"name": "app.1.0.0", "version": "1.0.0"}
    assert condition(ce, "Installed")["status"] == "True"
    assert ce["status"]["activeRevision"] == 1
    assert _versions(olm) == {"app": "1.0.0", "db": "1.0.0"}
    assert _db_configmap(olm) == "1.0.0"


def _cli(
    capsys: pytest.CaptureFixture[str], cluster: TestCluster, olm: Olm, *argv: str
) -> tuple[int, str]:
    code = main([*argv, "--kubeconfig", str(cluster.kubeconfig), "--namespace", olm.namespace])
    out, _ = capsys.readouterr()
    return code, out


def test_manual_approval_plan_history_rollback(
    olm: Olm, cluster: TestCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    olm.catalog("test", [Package("test", [Bundle("1.0.0")])])
    olm.apply(with_annotations(CE, **{"pivoter.io/approval": "Manual"}))
    target = f"clusterextension/{olm.name}"
    ce = olm.reports("Progressing", "False", "Blocked", f"pivoter approve {target} --revision 1")
    assert _children(olm) == {}
    assert condition(ce, "Installed")["reason"] == "Failed"
    code, out = _cli(capsys, cluster, olm, "plan", target, "-o", "json")
    assert code == 0
    assert json.loads(out)["added"][0]["bundle"] == "test.1.0.0"
    code, out = _cli(capsys, cluster, olm, "approve", target)
    assert (code, "approved revision 1" in out) == (0, True)
    olm.bundle_installed("test.1.0.0", "1.0.0")
    olm.rolled_out()

    # a new version: it waits for its own approval, with the plan of objects it changes
    ref = push_catalog(
        olm.registry,
        olm.scenario,
        "test",
        "v2",
        [Package("test", [Bundle("1.0.0"), Bundle("1.1.0", replaces="1.0.0")])],
    )
    olm.kube.merge_patch(
        CLUSTER_CATALOGS, olm.catalogs["test"], {"spec": {"source": {"image": {"ref": ref}}}}
    )
    olm.reports("Progressing", "False", "Blocked", f"pivoter approve {target} --revision 2")
    olm.wait(
        lambda o: "counts" in ((o["status"].get("pendingPlan") or {}).get("objects") or {}),
        what="the objects of plan 2",
    )
    code, out = _cli(capsys, cluster, olm, "plan", target)
    assert code == 0
    assert "revision 2 (from 1): test 1.0.0->1.1.0" in out
    assert olm.get()["status"]["install"]["bundle"]["version"] == "1.0.0"
    assert _cli(capsys, cluster, olm, "approve", target, "--revision", "2")[0] == 0
    olm.bundle_installed("test.1.1.0", "1.1.0")
    olm.rolled_out()

    # history, then back to revision 1 (a pin), then follow the catalogs again
    code, out = _cli(capsys, cluster, olm, "history", target, "-o", "json")
    assert code == 0
    assert [r["revision"] for r in json.loads(out)] == [1, 2]
    assert _cli(capsys, cluster, olm, "rollback", target, "--to-revision", "1")[0] == 0
    olm.bundle_installed("test.1.0.0", "1.0.0")
    ce = olm.rolled_out()
    assert ce["metadata"]["annotations"]["pivoter.io/pinned-revision"] == "1"
    # unpinned, it follows the catalogs again: revision 2, approved before, is the newest
    assert _cli(capsys, cluster, olm, "unpin", target)[0] == 0
    olm.bundle_installed("test.1.1.0", "1.1.0")
    ce = olm.rolled_out()
    assert "pivoter.io/pinned-revision" not in ce["metadata"]["annotations"]


def test_uniqueness_across_extensions_resolutions_and_platform_operators(olm: Olm) -> None:
    """A package a Resolution installs is not installed again by a ClusterExtension; nor is
    another package providing an API the Resolution's bundle provides."""
    package = f"u{olm.scenario}"
    namespaces = olm.kube.resource("v1", "Namespace")
    # A Resolution installs registry+v1 bundles into <package>-system.
    olm.apply(f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {package}-system\n")
    olm.catalog(
        "test",
        [
            Package(package, [Bundle("1.0.0")]),
            Package("twin", [Bundle("1.0.0", provides=f"U{olm.scenario}Test")]),
        ],
    )
    name = olm.catalogs["test"]
    olm.wait(
        lambda o: reports(o, "Serving", "True"),
        what="Serving",
        name=name,
        resource=CLUSTER_CATALOGS,
    )
    # A Resolution reads ClusterCatalogs through pivoter's cache too (under ClusterCatalog/NAME).
    resolution = unique_name("res")
    olm.kube.create(
        RESOLUTIONS,
        {
            "apiVersion": "pivoter.io/v1alpha1",
            "kind": "Resolution",
            "metadata": {"name": resolution, "labels": session_labels()},
            "spec": {"packages": [{"name": package}], "progressDeadlineSeconds": 60},
        },
    )
    try:
        ready = olm.wait(
            lambda o: reports(o, "Ready", "True"),
            what="the Resolution ready",
            name=resolution,
            resource=RESOLUTIONS,
            timeout=150,
        )
        assert ready["status"]["selection"][0]["package"] == package
        olm.apply(CE.replace("${PACKAGE:test}", package))
        ce = olm.reports("Progressing", "True", "Retrying", f"Resolution/{resolution}")
        assert f"package {package} is already managed by" in condition(ce, "Progressing")["message"]
        assert condition(ce, "Installed")["status"] == "False"
        olm.delete_extensions()
        olm.apply(CE.replace("${PACKAGE:test}", "twin"))
        olm.reports(
            "Progressing",
            "True",
            "Retrying",
            f"which package {package} (held at 1.0.0 by Resolution {resolution}) provides: only "
            "one package may provide an API",
        )
        assert _children(olm) == {}
    finally:
        olm.delete_extensions()
        olm.kube.delete(RESOLUTIONS, resolution)

        def gone() -> bool:
            try:
                olm.kube.get(RESOLUTIONS, resolution)
            except NotFound:
                return True
            return False

        wait_for(gone, timeout=120, what="the Resolution to be deleted")
        olm.kube.delete(namespaces, f"{package}-system")


def test_adopt_existing_takes_over_what_another_owner_applied(olm: Olm) -> None:
    """The migration from operator-controller: its objects are already there, owned by its Helm
    release. Without the annotation pivoter refuses them (recover.feature's conflict); with
    ``pivoter.io/adopt-existing`` it takes them over in place (same uid)."""
    olm.catalog("test", [Package("test", [Bundle("1.2.0")])])
    configmaps = olm.kube.resource("v1", "ConfigMap")
    name = f"test-configmap-{olm.scenario}-test"
    existing = olm.kube.create(
        configmaps,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "namespace": olm.test_namespace,
                "labels": {"olm.operatorframework.io/owner-kind": "ClusterExtension"},
            },
            "data": {"version": "from operator-controller"},
        },
        olm.test_namespace,
    )
    olm.apply(with_annotations(CE, **{"pivoter.io/adopt-existing": "true"}))
    olm.bundle_installed("test.1.2.0", "1.2.0")
    olm.rolled_out()
    adopted = olm.kube.get(configmaps, name, olm.test_namespace)
    assert adopted["metadata"]["uid"] == existing["metadata"]["uid"]
    assert adopted["data"] == {"version": "1.2.0"}
    assert _children(olm)["test"]["spec"]["adoptExisting"] is True
