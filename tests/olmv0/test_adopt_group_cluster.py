"""An operator and the dependency OLM v0 installed for it are adopted as one group (issue 29).

mercury-operator, changed to require aqua's ``AquaCsp`` API (its CSV's
``customresourcedefinitions.required`` and the catalog's ``olm.gvk.required``, as ``opm
render`` writes it), is subscribed to alone; the real OLM v0 resolves the requirement and installs
aqua beside it under a Subscription it generates. Then:

* adopting aqua alone is refused before anything changes (mercury, left to OLM v0, requires it:
  OLM v0 would install it again), with the Subscription to adopt instead;
* adopting mercury adopts both, as one Resolution with one package each and one point of no
  return: both Subscriptions and CSVs gone, every object of both kept (same uids, no rollout),
  one child per package;
* handing mercury back hands both back: both Subscriptions re-created at the bundles that ran,
  both CSVs Succeeded, nothing of pivoter left, no rollout.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pivoter.apis.resources import RESOLUTIONS
from pivoter.kube import NotFound
from pivoter.olmv0.mapping import ANNOTATION_ADOPTION, resolution_name
from tests.cluster import TestCluster, wait_for
from tests.inputs.conftest import Env
from tests.olmv0.content import BundleDir, read_bundle, write_fbc
from tests.olmv0.peer import CSVS, SUBSCRIPTIONS, OlmV0
from tests.olmv0.test_adopt_cluster import (
    DEPLOYMENTS,
    NAMESPACES,
    _adopt,
    _namespace,
    _pivoter_catalog,
    _pods,
    _replica_sets,
    _wait_settled,
)
from tests.registry_v1.helpers import bundle
from tests.wire.conftest import OpmServer

pytestmark = [pytest.mark.cluster, pytest.mark.kwok, pytest.mark.slow, pytest.mark.timeout(900)]

API = {"group": "operator.aquasec.com", "version": "v1alpha1", "kind": "AquaCsp"}


def _requiring_aqua(tmp_path: Path) -> BundleDir:
    """mercury-operator, requiring aqua's AquaCsp instead of the Kafka and Camel APIs."""
    source = read_bundle(bundle("mercury-operator"))
    target = tmp_path / "mercury-requires-aqua"
    shutil.copytree(source.root, target)
    csv_path = next(
        p for p in (target / "manifests").iterdir() if "clusterserviceversion" in p.name
    )
    csv = yaml.safe_load(csv_path.read_text())
    csv["spec"]["customresourcedefinitions"]["required"] = [
        {"name": f"aquacsps.{API['group']}", "version": API["version"], "kind": API["kind"]}
    ]
    csv_path.write_text(yaml.safe_dump(csv, sort_keys=False))
    return read_bundle(target)


def _with_requirement(directory: Path, dependent: BundleDir) -> None:
    """Add the dependent's ``olm.gvk.required`` to its bundle in the FBC at ``directory``."""
    path = directory / f"{dependent.package}.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc.get("schema") == "olm.bundle" and doc.get("name") == dependent.name:
            doc["properties"].append({"type": "olm.gvk.required", "value": dict(API)})
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


@pytest.fixture
def olm_catalog_requiring(tmp_path: Path) -> Iterator[list[OpmServer]]:
    servers: list[OpmServer] = []
    yield servers
    for server in servers:
        server.close()


def _generated_subscription(env: Env, namespace: str, package: str) -> dict[str, Any]:
    for sub in env.kube.list(SUBSCRIPTIONS, namespace)[0]:
        if (sub.get("spec") or {}).get("name") == package:
            return sub
    raise AssertionError(f"no Subscription for {package} in {namespace}")


def test_an_operator_and_its_dependency_are_adopted_as_one_group(
    cluster: TestCluster,
    olm: OlmV0,
    env: Env,
    olm_catalog_requiring: list[OpmServer],
    tmp_path: Path,
) -> None:
    dependent = _requiring_aqua(tmp_path)
    dependency = read_bundle(bundle("aqua"))
    directory = tmp_path / "olm-fbc"
    write_fbc(directory, [dependent, dependency])
    _with_requirement(directory, dependent)
    server = OpmServer(directory, tmp_path)
    olm_catalog_requiring.append(server)

    namespace = _namespace(env)
    source = olm.catalog_source(namespace, server.target)
    olm.operator_group(namespace, [namespace])
    olm.subscription(namespace, dependent.package, dependent.channels[0], source)
    olm.wait_installed(namespace, dependent.package, timeout=300)
    generated = _generated_subscription(env, namespace, dependency.package)
    generated_name = str(generated["metadata"]["name"])
    olm.wait_installed(namespace, generated_name, timeout=300)
    _wait_settled(env, namespace, [])
    deployments = {d["metadata"]["name"]: d["metadata"]["uid"] for d in _list(env, namespace)}
    replica_sets, pods = _replica_sets(env, namespace), _pods(env, namespace)

    _pivoter_catalog(env, [dependent, dependency])
    _with_requirement(env.publisher.directory, dependent)

    # The dependency alone: refused, nothing changed.
    refused = _adopt(cluster, "--subscription", f"{namespace}/{generated_name}", "--dry-run")
    assert refused.returncode == 3, refused.stderr
    assert f"adopt Subscription {dependent.package} instead" in refused.stderr
    with pytest.raises(NotFound):
        env.get(resolution_name(namespace, generated_name))

    # The dependent: both, as one group.
    planned = _adopt(cluster, "--subscription", f"{namespace}/{dependent.package}", "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert f"Subscription {namespace}/{generated_name}" in planned.stdout
    # The dry run asked the daemon what the takeover would change, field by field: owner labels
    # only, no pod replaced; and left nothing behind.
    assert "passed a server-side dry run" in planned.stdout, planned.stdout
    assert "label core.rukpak.io/owner-kind added" in planned.stdout
    assert "pods replaced: none" in planned.stdout
    wait_for(
        lambda: (
            not [
                r
                for r in env.kube.list(RESOLUTIONS)[0]
                if r["metadata"]["name"].startswith("olmv0-dry-run")
            ]
        ),
        timeout=60,
        what="the dry run's Resolution to go",
    )
    name = resolution_name(namespace, dependent.package)
    adopted = _adopt(
        cluster, "--subscription", f"{namespace}/{dependent.package}", "--timeout", "400"
    )
    env.created.append((RESOLUTIONS, name))
    assert adopted.returncode == 0, adopted.stderr + adopted.stdout
    res = env.get(name)
    assert res["metadata"]["annotations"][ANNOTATION_ADOPTION] == "Adopted"
    assert sorted(p["name"] for p in res["spec"]["packages"]) == sorted(
        [dependent.package, dependency.package]
    )
    packages = [
        c["metadata"]["annotations"]["pivoter.io/package"] for c in env.children(name).values()
    ]
    assert sorted(packages) == sorted([dependent.package, dependency.package])
    for sub in (dependent.package, generated_name):
        with pytest.raises(NotFound):
            env.kube.get(SUBSCRIPTIONS, sub, namespace)
    for csv in (dependent.name, dependency.name):
        with pytest.raises(NotFound):
            env.kube.get(CSVS, csv, namespace)
    now = {d["metadata"]["name"]: d["metadata"]["uid"] for d in _list(env, namespace)}
    assert now == deployments, "a Deployment was re-created"
    assert _replica_sets(env, namespace) == replica_sets, "the adoption rolled pods out"
    assert _pods(env, namespace) == pods

    # Handed back as a group: both Subscriptions again, both CSVs, pivoter gone, no rollout.
    handed = _adopt(
        cluster, "--subscription", f"{namespace}/{dependent.package}", "--undo", "--timeout", "300"
    )
    assert handed.returncode == 0, handed.stderr + handed.stdout
    for sub in (dependent.package, generated_name):
        assert env.kube.get(SUBSCRIPTIONS, sub, namespace)
    for csv in (dependent.name, dependency.name):
        assert env.kube.get(CSVS, csv, namespace)["status"]["phase"] == "Succeeded"
    assert env.children(name) == {}
    with pytest.raises(NotFound):
        env.get(name)
    now = {d["metadata"]["name"]: d["metadata"]["uid"] for d in _list(env, namespace)}
    assert now == deployments, "a Deployment was re-created by the hand-back"
    assert _replica_sets(env, namespace) == replica_sets, "the hand-back rolled pods out"
    env.cleanup()
    env.kube.delete(NAMESPACES, namespace)
    wait_for(lambda: not _exists(env, namespace), timeout=120, what="the namespace to go")


def _list(env: Env, namespace: str) -> list[dict[str, Any]]:
    return list(env.kube.list(DEPLOYMENTS, namespace)[0])


def _exists(env: Env, namespace: str) -> bool:
    try:
        env.kube.get(NAMESPACES, namespace)
    except NotFound:
        return False
    return True
