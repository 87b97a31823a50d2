"""The committed CRDs are exactly what ``pivoter.apis.generate`` writes, and keep rukpak's shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pivoter.apis import generate, rukpak

CRD_DIR = Path(__file__).resolve().parents[2] / "crds"


@pytest.mark.parametrize("filename", sorted(generate.CRDS))
def test_committed_crd_is_generated(filename: str) -> None:
    committed = (CRD_DIR / filename).read_text()
    assert committed == generate.render(generate.CRDS[filename]), (
        f"crds/{filename} is stale: run `python -m pivoter.apis.generate`"
    )


def _schema(crd: dict[str, object]) -> dict[str, object]:
    versions = crd["spec"]["versions"]  # type: ignore[index]
    return versions[0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]


def test_rukpak_name_limits_and_unions() -> None:
    bundle = _schema(rukpak.bundle_crd())
    bd = _schema(rukpak.bundle_deployment_crd())
    assert bundle["properties"]["metadata"]["properties"]["name"]["maxLength"] == 52  # type: ignore[index]
    assert bd["properties"]["metadata"]["properties"]["name"]["maxLength"] == 45  # type: ignore[index]
    source = bundle["properties"]["spec"]["properties"]["source"]  # type: ignore[index]
    assert {tuple(o["required"]) for o in source["oneOf"]} == {
        ("git",),
        ("image",),
        ("configMaps",),
        ("http",),
        ("upload",),
    }
    ref = source["properties"]["git"]["properties"]["ref"]
    assert {tuple(o["required"]) for o in ref["oneOf"]} == {("branch",), ("commit",), ("tag",)}


def test_template_spec_is_the_bundle_spec() -> None:
    bd = _schema(rukpak.bundle_deployment_crd())
    template_spec = bd["properties"]["spec"]["properties"]["template"]["properties"]["spec"]  # type: ignore[index]
    bundle_spec = _schema(rukpak.bundle_crd())["properties"]["spec"]  # type: ignore[index]
    assert template_spec == bundle_spec


def test_no_builder_markers_leak_into_crds() -> None:
    for filename in generate.CRDS:
        assert "x_map_atomic" not in (CRD_DIR / filename).read_text()
        assert yaml.safe_load((CRD_DIR / filename).read_text())["kind"] == (
            "CustomResourceDefinition"
        )
