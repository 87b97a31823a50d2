"""``pivoter resolve`` on real catalog data (packages copied into tests/data/resolver)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.clirun import pivoter

DATA = Path(__file__).resolve().parents[1] / "data" / "resolver"
COMMUNITY = DATA / "community"
CERTIFIED = DATA / "certified"


def resolve(*args: str, seed: str | None = None) -> subprocess.CompletedProcess[str]:
    """``pivoter resolve ARGS``; given a hash ``seed``, in a real process started with it (a forked
    one keeps its server's)."""
    if seed is None:
        return pivoter("resolve", *args, timeout=None)
    env = {**os.environ, "PYTHONHASHSEED": seed}
    return pivoter("resolve", *args, env=env, timeout=None, fresh=True)


def bundles(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    doc = yaml.safe_load(proc.stdout)
    return {b["package"]: b["bundle"] for b in doc["bundles"]}


def test_dependency_chain_pulls_in_the_cluster_operator() -> None:
    proc = resolve(
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-messaging-topology-operator",
        "-o",
        "yaml",
    )
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load(proc.stdout)
    assert doc["apiVersion"] == "pivoter.io/v1alpha1"
    assert doc["kind"] == "ResolveSet"
    assert bundles(proc) == {
        "rabbitmq-messaging-topology-operator": "rabbitmq-messaging-topology-operator.v1.19.3",
        "rabbitmq-cluster-operator": "rabbitmq-cluster-operator.v2.22.3",
    }
    for b in doc["bundles"]:
        assert b["provisionerClassName"] == "core-rukpak-io-registry"
        assert b["channel"] == "stable"
        assert b["catalog"] == "community"
        assert b["image"].startswith("quay.io/")
    assert doc["metadata"]["selectionHash"].startswith("sha256:")


def test_cluster_operator_alone_has_no_dependencies() -> None:
    proc = resolve(
        "--catalog", str(COMMUNITY), "--package", "rabbitmq-cluster-operator", "-o", "json"
    )
    assert proc.returncode == 0, proc.stderr
    assert list(bundles(proc)) == ["rabbitmq-cluster-operator"]
    json.loads(proc.stdout)


@pytest.mark.parametrize(
    ("package", "versions"),
    [
        ("pg4k-pgd", "2.0.1, 2.0.0, 2.0.0-rc1, 1.2.1, 1.2.0, 1.2.0-rc1, 1.1.3, 1.1.2, 1.1.1"),
        ("alloydb-omni-operator-certified", "1.8.0, 1.7.1, 1.7.0"),
    ],
)
def test_missing_cert_manager_is_a_minimal_explanation(package: str, versions: str) -> None:
    proc = resolve("--catalog", str(CERTIFIED), "--package", package, "--explain")
    assert proc.returncode == 4
    assert proc.stdout == ""
    summary = proc.stderr.split("minimal set of conflicting constraints:")[0]
    assert (
        f"{package} {versions} require a bundle providing an API with group: cert-manager.io, "
        "version: v1, kind: Certificate, which no bundle in any catalog provides"
    ) in summary
    assert f"package {package} is requested:" in summary
    # The minimal set: the request, its candidate list, one unmet requirement per candidate.
    explained = proc.stderr.split("minimal set of conflicting constraints:\n")[1].splitlines()
    mus = [line for line in explained if line.startswith("  - ")]
    # ... and the same constraints in one line, as OLM words its message.
    assert explained[-1] == "in one line: constraints not satisfiable: " + ", ".join(
        line[4:] for line in mus
    )
    candidates = int(summary.split(f"package {package} is requested: ")[1].split(" candidate")[0])
    assert len(mus) == 2 + candidates
    assert mus[0] == f"  - package {package} is requested"
    assert all("requires" in line or "needs one of" in line for line in mus[1:])


def test_version_range_narrows_the_explanation() -> None:
    proc = resolve("--catalog", str(CERTIFIED), "--package", "pg4k-pgd@1.1.0")
    assert proc.returncode == 4
    assert "pg4k-pgd 1.1.0 requires a bundle with package: cert-manager" in proc.stderr
    assert "2.0.1" not in proc.stderr


def test_installed_round_trip_keeps_the_selection(tmp_path: Path) -> None:
    first = resolve(
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-messaging-topology-operator",
        "-o",
        "yaml",
    )
    installed = tmp_path / "installed.yaml"
    installed.write_text(first.stdout)
    again = resolve(
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-messaging-topology-operator",
        "--installed",
        str(installed),
        "-o",
        "yaml",
    )
    assert again.returncode == 0, again.stderr
    a, b = yaml.safe_load(first.stdout), yaml.safe_load(again.stdout)
    assert a["metadata"]["selectionHash"] == b["metadata"]["selectionHash"]
    assert a["metadata"]["inputsDigest"] != b["metadata"]["inputsDigest"]


def test_installed_older_bundle_upgrades_along_edges(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "pivoter.io/v1alpha1",
        "kind": "ResolveSet",
        "bundles": [
            {
                "package": "rabbitmq-cluster-operator",
                "bundle": "rabbitmq-cluster-operator.v2.22.2",
                "version": "2.22.2",
            }
        ],
    }
    installed = tmp_path / "installed.yaml"
    installed.write_text(yaml.safe_dump(doc))
    proc = resolve(
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-cluster-operator",
        "--installed",
        str(installed),
        "-o",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["bundles"][0]
    assert out["replaces"] == "rabbitmq-cluster-operator.v2.22.2"
    assert out["version"] == "2.22.3"


def test_kube_version_excludes_bundles_needing_a_newer_cluster(tmp_path: Path) -> None:
    catalog = tmp_path / "cat"
    shutil.copytree(COMMUNITY / "rabbitmq-cluster-operator", catalog / "rabbitmq-cluster-operator")
    path = catalog / "rabbitmq-cluster-operator" / "catalog.yaml"
    docs = list(yaml.safe_load_all(path.read_text()))
    for d in docs:
        if d.get("schema") == "olm.bundle" and d["name"] == "rabbitmq-cluster-operator.v2.22.3":
            for p in d["properties"]:
                if p["type"] == "olm.csv.metadata":
                    p["value"]["minKubeVersion"] = "1.40.0"
    path.write_text(yaml.safe_dump_all(docs))
    base = ["--catalog", str(catalog), "--package", "rabbitmq-cluster-operator", "-o", "yaml"]
    new = resolve(*base, "--kube-version", "1.40.1")
    old = resolve(*base, "--kube-version", "1.30.0", "--explain")
    assert bundles(new)["rabbitmq-cluster-operator"].endswith("v2.22.3")
    assert not bundles(old)["rabbitmq-cluster-operator"].endswith("v2.22.3")
    why = yaml.safe_load(old.stdout)["whyNotNewer"]["rabbitmq-cluster-operator"]
    assert any("needs Kubernetes 1.40.0 or newer" in line for line in why)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--package", "x"], 3, "--catalog"),
        (["--catalog", str(COMMUNITY), "--package", "x@foobar"], 3, "foobar"),
        (["--catalog", str(COMMUNITY) + ",priority=high", "--package", "x"], 3, "priority"),
        (["--catalog", str(COMMUNITY), "--package", "no-such-package"], 4, "no catalog has"),
    ],
)
def test_bad_input_exit_codes(args: list[str], code: int, message: str) -> None:
    proc = resolve(*args)
    assert proc.returncode == code
    assert message in proc.stderr


def test_bad_installed_document_is_invalid_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\n")
    proc = resolve("--catalog", str(COMMUNITY), "--package", "x", "--installed", str(bad))
    assert proc.returncode == 3
    assert "expected apiVersion pivoter.io/v1alpha1 kind ResolveSet" in proc.stderr


def test_same_answer_and_explanation_across_hash_seeds_and_argument_order() -> None:
    packages = ["--package", "rabbitmq-messaging-topology-operator", "--package", "pg4k-pgd"]
    cats_a = ["--catalog", str(COMMUNITY), "--catalog", str(CERTIFIED)]
    cats_b = ["--catalog", str(CERTIFIED), "--catalog", str(COMMUNITY)]
    runs = [
        resolve(*cats, *packages, "--explain", seed=seed)
        for seed, cats in (("0", cats_a), ("1", cats_b), ("12345", cats_a), ("random", cats_b))
    ]
    assert {r.returncode for r in runs} == {4}
    assert len({r.stderr for r in runs}) == 1
    ok = [
        resolve(*cats_a, "--package", "rabbitmq-messaging-topology-operator", "-o", "json", seed=s)
        for s in ("0", "7", "random")
    ]
    assert len({r.stdout for r in ok}) == 1


def test_other_profiles_from_the_command_line() -> None:
    olm = resolve(
        "--profile",
        "olm-v0",
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-messaging-topology-operator",
        "-o",
        "yaml",
    )
    assert olm.returncode == 0, olm.stderr
    assert set(bundles(olm)) == {
        "rabbitmq-messaging-topology-operator",
        "rabbitmq-cluster-operator",
    }
    # OLM v1 today rejects bundles that declare dependencies.
    v1 = resolve(
        "--profile",
        "olmv1-filter",
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-messaging-topology-operator",
    )
    assert v1.returncode == 3
    assert 'dependency declared via property "olm.gvk.required"' in v1.stderr
    alone = resolve(
        "--profile",
        "olmv1-filter",
        "--catalog",
        str(COMMUNITY),
        "--package",
        "rabbitmq-cluster-operator",
        "-o",
        "yaml",
    )
    assert bundles(alone) == {"rabbitmq-cluster-operator": "rabbitmq-cluster-operator.v2.22.3"}
    unsat = resolve("--profile", "olm-v0", "--catalog", str(CERTIFIED), "--package", "pg4k-pgd")
    assert unsat.returncode == 4
    assert "subscription pg4k-pgd exists" in unsat.stderr
    assert "requires an operator providing an API with group: cert-manager.io" in unsat.stderr


def test_unreadable_and_invalid_catalogs(tmp_path: Path) -> None:
    missing = resolve("--catalog", str(tmp_path / "nope"), "--package", "x")
    assert missing.returncode == 1
    assert "no such directory" in missing.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "catalog.yaml").write_text("schema: olm.bundle\nname: [unclosed\n")
    invalid = resolve("--catalog", str(broken), "--package", "x")
    assert invalid.returncode == 3
    assert "catalog.yaml" in invalid.stderr
