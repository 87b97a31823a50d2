"""The helm format with the real helm binary: charts, values, dependencies, hooks, bad input."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from provisioners.formats.base import EmptyBundleError, FormatError, InvalidConfigError
from provisioners.formats.helm import Capabilities, HelmFormat, RenderLimits
from provisioners.formats.helm.chart import NotAChartError
from provisioners.formats.helm.format import UnsupportedHookError
from provisioners.formats.helm.render import RenderError
from tests.tools import tool

CHARTS = Path(__file__).resolve().parents[1] / "data" / "helm"

pytestmark = pytest.mark.tools  # every test renders with the real helm


@pytest.fixture(autouse=True)
def _helm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIVOTER_HELM", str(tool("helm")))


def _bundle(tmp_path: Path, chart: str, subdir: str = "") -> Path:
    root = tmp_path / "bundle"
    shutil.copytree(CHARTS / chart, root / subdir if subdir else root)
    return root


def _by_name(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def test_chart_at_the_root_with_values_and_capabilities(tmp_path: Path) -> None:
    fmt = HelmFormat(capabilities=lambda: Capabilities(kube_version="v1.36.3"))
    out = fmt.convert(
        _bundle(tmp_path, "simple"),
        {
            "values": "replicas: 3\ngreeting: bonjour\n",
            "installNamespace": "apps",
            "releaseName": "r",
        },
    )
    objects = _by_name(out.objects)
    assert set(objects) == {"r-web", "r-config", "r-extra"}
    assert objects["r-web"]["spec"]["replicas"] == 3
    assert objects["r-config"]["data"] == {"greeting": "bonjour", "kubeVersion": "v1.36.3"}
    # Objects that name no namespace get the install namespace.
    assert {o["metadata"]["namespace"] for o in out.objects} == {"apps"}
    assert out.metadata["chart"] == "simple"


def test_values_can_remove_an_object(tmp_path: Path) -> None:
    out = HelmFormat().convert(_bundle(tmp_path, "simple"), {"values": "extraConfig: false"})
    assert "simple-extra" not in _by_name(out.objects)


def test_chart_in_a_subdirectory_and_a_vendored_dependency(tmp_path: Path) -> None:
    out = HelmFormat().convert(_bundle(tmp_path, "with-dep", "chart"))
    objects = _by_name(out.objects)
    assert objects["child"]["data"] == {"from": "from the subchart"}
    assert objects["parent"]["data"] == {"from": "parent"}


def test_values_from_config_maps_and_secrets(tmp_path: Path) -> None:
    live = {
        ("ConfigMap", "apps", "base"): {"data": {"values.yaml": "replicas: 2\ngreeting: hi\n"}},
        ("Secret", "apps", "secret"): {"data": {"v": "Z3JlZXRpbmc6IHNlY3JldAo="}},
    }
    out = HelmFormat().render(
        _bundle(tmp_path, "simple"),
        {
            "installNamespace": "apps",
            "valuesFrom": [
                {"kind": "ConfigMap", "name": "base"},
                {"kind": "Secret", "name": "secret", "key": "v"},
            ],
            "values": "replicas: 4",
        },
        lookup=lambda kind, ns, name: live.get((kind, ns, name)),
    )
    objects = _by_name(out.objects)
    assert objects["simple-web"]["spec"]["replicas"] == 4  # inline values win
    assert objects["simple-config"]["data"]["greeting"] == "secret"  # later source wins


def test_install_and_upgrade_hooks_come_apart_from_the_objects(tmp_path: Path) -> None:
    out = HelmFormat().convert(_bundle(tmp_path, "hooks"), {"releaseName": "r"})
    assert [o["metadata"]["name"] for o in out.objects] == ["r-config"]  # the test Pod skipped
    hooks = {h.object["metadata"]["name"]: h for h in out.hooks}
    assert set(hooks) == {"r-migrate", "r-smoke", "r-installed"}
    migrate = hooks["r-migrate"]
    assert (migrate.events, migrate.weight) == (("pre-install", "pre-upgrade"), -5)
    assert migrate.delete_policies == ("before-hook-creation",)  # the default
    assert hooks["r-smoke"].delete_policies == ("hook-succeeded",)
    assert (hooks["r-installed"].events, hooks["r-installed"].weight) == (("post-install",), 5)
    assert {h.object["metadata"]["namespace"] for h in out.hooks} == {"default"}


def test_delete_and_rollback_hooks_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(
        UnsupportedHookError,
        match=r"Job r-cleanup is a Helm hook \(pre-delete\) pivoter does not run \(pre-delete: "
        r"pivoter runs nothing while a BundleDeployment is deleted\)",
    ):
        HelmFormat().convert(
            _bundle(tmp_path, "hooks"), {"releaseName": "r", "values": "deleteHook: true"}
        )


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"values": "a: [unclosed"}, "not valid YAML"),
        ({"values": "- a list"}, "must be a YAML mapping"),
        ({"values": {"a": 1}}, "must be a YAML string"),
        ({"valuesFrom": [{"kind": "ConfigMap", "name": "x"}]}, "cluster-side reader"),
        ({"colour": "blue"}, "unknown spec.config keys"),
    ],
)
def test_bad_config(tmp_path: Path, config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidConfigError, match=fragment):
        HelmFormat().convert(_bundle(tmp_path, "simple"), config)


def test_not_a_chart(tmp_path: Path) -> None:
    root = tmp_path / "bundle"
    (root / "manifests").mkdir(parents=True)
    (root / "manifests" / "a.yaml").write_text("kind: ConfigMap")
    with pytest.raises(NotAChartError, match=r"no Chart.yaml .*found: manifests"):
        HelmFormat().convert(root)


def test_a_template_that_fails(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"values\.name is required"):
        HelmFormat().convert(_bundle(tmp_path, "broken"))


def test_a_template_that_loops_is_stopped(tmp_path: Path) -> None:
    fmt = HelmFormat(limits=RenderLimits(timeout_seconds=2))
    start = time.monotonic()
    with pytest.raises(RenderError, match="did not finish within 2 s"):
        fmt.convert(_bundle(tmp_path, "loop"))
    assert time.monotonic() - start < 30  # bounded: killed at the deadline, not run to the end


def test_a_template_that_produces_too_much(tmp_path: Path) -> None:
    fmt = HelmFormat(limits=RenderLimits(max_output_bytes=1 << 20))
    with pytest.raises(RenderError, match="more than 1048576 bytes"):
        fmt.convert(_bundle(tmp_path, "huge"))


def test_an_empty_rendering(tmp_path: Path) -> None:
    root = _bundle(tmp_path, "simple")
    for template in (root / "templates").iterdir():
        template.unlink()
    with pytest.raises(EmptyBundleError):
        HelmFormat().convert(root)


def test_format_errors_share_the_base_class() -> None:
    assert issubclass(RenderError, FormatError)
    assert issubclass(UnsupportedHookError, FormatError)
