"""Helm charts as bundles through the BundleDeployment controller (rukpak's helm e2e scenarios).

Charts come from the tests' own http server (tar.gz) and git server; the reconcilers are driven
directly (tests/bundles/conftest.py). Objects are applied by pivoter's appliers, not as Helm
releases: no release Secret is written.
"""

from __future__ import annotations

import http.server
import io
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pivoter.apis.resources import BUNDLE_DEPLOYMENTS
from pivoter.kube import NotFound
from tests.bundles.conftest import Harness, condition, is_
from tests.cluster import session_labels, unique_name
from tests.provisioners.git_servers import git, serve_git_http
from tests.provisioners.servers import serve_http
from tests.tools import tool

pytestmark = pytest.mark.cluster

CHARTS = Path(__file__).resolve().parents[1] / "data" / "helm"


@pytest.fixture(autouse=True)
def _helm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIVOTER_HELM", str(tool("helm")))


def _tgz(chart: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(CHARTS / chart, arcname=chart)
    return buffer.getvalue()


FILES = {
    "/simple.tgz": _tgz("simple"),
    "/with-dep.tgz": _tgz("with-dep"),
    "/hooks.tgz": _tgz("hooks"),
    "/not-gzip.tgz": b"this is not a tarball",
    "/no-chart.tgz": b"",
}


@pytest.fixture(scope="module")
def charts_url() -> Iterator[str]:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("manifests/cm.yaml")
        data = b"kind: ConfigMap\n"
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    files = {**FILES, "/no-chart.tgz": buffer.getvalue()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_http(Handler) as url:
        yield url


@pytest.fixture(scope="module")
def chart_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A git repository with the chart at its root on branch main, and in charts/simple on
    branch nested."""
    root = tmp_path_factory.mktemp("helm-git")
    work = root / "work"
    shutil.copytree(CHARTS / "simple", work)
    git("init", "--quiet", "--initial-branch=main", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "--quiet", "-m", "chart at the root", cwd=work)
    git("checkout", "--quiet", "-b", "nested", cwd=work)
    (work / "charts").mkdir()
    nested = work / "charts" / "simple"
    nested.mkdir()
    for name in ("Chart.yaml", "values.yaml", "templates"):
        git("mv", name, f"charts/simple/{name}", cwd=work)
    git("commit", "--quiet", "-m", "chart in a directory", cwd=work)
    git("clone", "--quiet", "--bare", str(work), str(root / "charts.git"))
    with serve_git_http(root) as url:
        yield f"{url}/charts.git"


def _helm_bd(
    h: Harness,
    source: dict[str, Any],
    values: str | None = None,
    name: str = "",
    **config_extra: Any,
) -> str:
    name = name or unique_name("hbd")
    spec: dict[str, Any] = {
        "provisionerClassName": "core-rukpak-io-helm",
        "template": {"spec": {"provisionerClassName": "core-rukpak-io-helm", "source": source}},
    }
    config: dict[str, Any] = {"installNamespace": h.system_namespace, "releaseName": name}
    if values is not None:
        config["values"] = values
    spec["config"] = {**config, **config_extra}
    h.kube.create(
        BUNDLE_DEPLOYMENTS,
        {
            "apiVersion": "core.rukpak.io/v1alpha1",
            "kind": "BundleDeployment",
            "metadata": {"name": name, "labels": session_labels()},
            "spec": spec,
        },
    )
    return name


def _installed(bd: dict[str, Any]) -> bool:
    return is_(bd, "Installed", "True", "InstallationSucceeded")


def _get(h: Harness, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
    try:
        return h.kube.get(h.kube.resource(api_version, kind), name, h.system_namespace)
    except NotFound:
        return None


def test_install_from_a_url_with_values_then_prune_on_update(
    harness: Harness, charts_url: str
) -> None:
    h = harness
    source = {"type": "http", "http": {"url": f"{charts_url}/simple.tgz"}}
    name = _helm_bd(h, source, values="replicas: 2\ngreeting: from values\n")
    h.converge(name, _installed, what="Installed")
    deployment = _get(h, "apps/v1", "Deployment", f"{name}-web")
    assert deployment is not None
    assert deployment["spec"]["replicas"] == 2
    config = _get(h, "v1", "ConfigMap", f"{name}-config")
    assert config is not None
    assert config["data"]["greeting"] == "from values"
    # The chart saw the cluster's own version as .Capabilities.KubeVersion.
    assert config["data"]["kubeVersion"].startswith("v1.36.")
    assert _get(h, "v1", "ConfigMap", f"{name}-extra") is not None
    # No Helm release storage: pivoter applies the objects itself.
    secrets, _ = h.kube.list(h.kube.resource("v1", "Secret"), h.system_namespace)
    assert not [s for s in secrets if s.get("type") == "helm.sh/release.v1"]

    # A deleted Deployment is re-created by the next reconcile.
    h.kube.delete(h.kube.resource("apps/v1", "Deployment"), f"{name}-web", h.system_namespace)
    h.deployments.reconcile(name)
    assert _get(h, "apps/v1", "Deployment", f"{name}-web") is not None

    # New values drop an object: the pivot prunes it.
    h.kube.merge_patch(
        BUNDLE_DEPLOYMENTS, name, {"spec": {"config": {"values": "extraConfig: false\n"}}}
    )
    h.converge(
        name,
        lambda bd: _installed(bd) and _get(h, "v1", "ConfigMap", f"{name}-extra") is None,
        what="the extra ConfigMap pruned",
    )


def test_chart_with_a_dependency(harness: Harness, charts_url: str) -> None:
    h = harness
    name = _helm_bd(h, {"type": "http", "http": {"url": f"{charts_url}/with-dep.tgz"}})
    h.converge(name, _installed, what="Installed")
    child = _get(h, "v1", "ConfigMap", "child")
    assert child is not None
    assert child["data"] == {"from": "from the subchart"}


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/missing.tgz", "404"),
        ("/not-gzip.tgz", "not a tar archive"),
        ("/no-chart.tgz", "not a Helm chart"),
    ],
)
def test_bad_urls_fail_clearly(harness: Harness, charts_url: str, path: str, fragment: str) -> None:
    h = harness
    name = _helm_bd(h, {"type": "http", "http": {"url": f"{charts_url}{path}"}})
    bd = h.converge(
        name, lambda bd: is_(bd, "HasValidBundle", "False", "UnpackFailed"), what="UnpackFailed"
    )
    assert fragment in condition(bd, "HasValidBundle")["message"]


def test_a_values_string_that_is_not_yaml(harness: Harness, charts_url: str) -> None:
    h = harness
    name = _helm_bd(
        h, {"type": "http", "http": {"url": f"{charts_url}/simple.tgz"}}, values="a: [oops"
    )
    bd = h.converge(
        name,
        lambda bd: is_(bd, "HasValidBundle", "False", "BundleLoadFailed"),
        what="BundleLoadFailed",
    )
    assert "spec.config.values" in condition(bd, "HasValidBundle")["message"]


@pytest.mark.parametrize(("branch", "directory"), [("main", ""), ("nested", "charts")])
def test_chart_from_git(harness: Harness, chart_repo: str, branch: str, directory: str) -> None:
    h = harness
    git_source: dict[str, Any] = {"repository": chart_repo, "ref": {"branch": branch}}
    if directory:
        git_source["directory"] = directory
    name = _helm_bd(h, {"type": "git", "git": git_source})
    h.converge(name, _installed, what="Installed")
    assert _get(h, "apps/v1", "Deployment", f"{name}-web") is not None


def test_values_from_a_config_map(harness: Harness, charts_url: str) -> None:
    h = harness
    h.kube.create(
        h.kube.resource("v1", "ConfigMap"),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "chart-values"},
            "data": {"values.yaml": "greeting: from a ConfigMap\nreplicas: 3\n"},
        },
        namespace=h.system_namespace,
    )
    name = _helm_bd(
        h,
        {"type": "http", "http": {"url": f"{charts_url}/simple.tgz"}},
        values="replicas: 2",
        valuesFrom=[{"kind": "ConfigMap", "name": "chart-values"}],
    )
    h.converge(name, _installed, what="Installed")
    config = _get(h, "v1", "ConfigMap", f"{name}-config")
    assert config is not None
    assert config["data"]["greeting"] == "from a ConfigMap"
    deployment = _get(h, "apps/v1", "Deployment", f"{name}-web")
    assert deployment is not None
    assert deployment["spec"]["replicas"] == 2  # inline values win over valuesFrom


def _job_done(h: Harness, name: str) -> dict[str, Any] | None:
    job = _get(h, "batch/v1", "Job", name)
    if job is None:
        return None
    done = {c["type"] for c in (job.get("status") or {}).get("conditions") or []}
    return job if "Complete" in done else None


def test_install_and_upgrade_hooks_run_around_the_apply(harness: Harness, charts_url: str) -> None:
    """pre-install/pre-upgrade Job kept (re-created on the next run), post-install/post-upgrade
    Job deleted once it succeeded, a post-install ConfigMap hook run on install only."""
    h = harness
    source = {"type": "http", "http": {"url": f"{charts_url}/hooks.tgz"}}
    name = _helm_bd(h, source, values='version: "1"')
    bd = h.converge(name, _installed, what="Installed with its hooks run", timeout=120)
    message = condition(bd, "Installed")["message"]
    migrate = _job_done(h, f"{name}-migrate")
    assert migrate is not None, "the pre-install Job ran to completion and was kept"
    assert _get(h, "batch/v1", "Job", f"{name}-smoke") is None  # hook-succeeded: deleted
    installed = _get(h, "v1", "ConfigMap", f"{name}-installed")
    assert installed is not None
    assert installed["data"] == {"firstVersion": "1"}
    assert _get(h, "v1", "ConfigMap", f"{name}-config")["data"] == {"version": "1"}  # type: ignore[index]
    # Hooks are not installed objects: not in the inventory, so never pruned.
    inventory = {(r["kind"], r["name"]) for r in bd["status"]["inventory"]}
    assert inventory == {("ConfigMap", f"{name}-config")}
    # The BundleDeployment says which hooks ran, in order.
    ran = [part for part in message.split("; ") if part.startswith("ran ")]
    assert [r.split(" (")[0] for r in ran] == [
        f"ran pre-install hook Job {name}-migrate",
        f"ran post-install hook Job {name}-smoke",
        f"ran post-install hook ConfigMap {name}-installed",
    ], message

    # An upgrade (new values): pre-upgrade re-creates the Job, post-upgrade runs the smoke Job
    # again, the post-install marker is left as it was.
    first_uid = migrate["metadata"]["uid"]
    h.kube.merge_patch(
        BUNDLE_DEPLOYMENTS,
        name,
        {"spec": {"config": {"values": 'version: "2"'}}},
    )

    def upgraded(obj: dict[str, Any]) -> bool:
        config = _get(h, "v1", "ConfigMap", f"{name}-config") or {}
        return _installed(obj) and (config.get("data") or {}).get("version") == "2"

    bd = h.converge(name, upgraded, what="upgraded with its hooks run", timeout=120)
    migrate = _job_done(h, f"{name}-migrate")
    assert migrate is not None
    assert migrate["metadata"]["uid"] != first_uid  # before-hook-creation: a new run
    assert migrate["metadata"]["labels"]["version"] == "2"
    assert _get(h, "batch/v1", "Job", f"{name}-smoke") is None
    assert _get(h, "v1", "ConfigMap", f"{name}-installed")["data"] == {"firstVersion": "1"}  # type: ignore[index]
    message = condition(bd, "Installed")["message"]
    assert f"ran pre-upgrade hook Job {name}-migrate" in message
    assert "post-install" not in message
