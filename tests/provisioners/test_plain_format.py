"""The plain+v0 format and the safe manifest loader (pure logic, real files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provisioners.formats import FormatError, format_for
from provisioners.formats.base import (
    EmptyBundleError,
    InvalidConfigError,
    InvalidManifestError,
    MissingManifestsError,
    NestedManifestsError,
)
from provisioners.formats.manifests import ManifestLimits
from provisioners.formats.plain import PlainV0

PLAIN = format_for("plain+v0")


def _bundle(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def test_yaml_and_json_multi_document_files(tmp_path: Path) -> None:
    root = _bundle(
        tmp_path,
        {
            "manifests/01-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
            "manifests/02-many.yml": (
                "---\n# comment only\n---\napiVersion: v1\nkind: ConfigMap\n"
                "metadata: {name: a, namespace: demo}\n---\n"
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: demo}\n"
            ),
            "manifests/03-crd.json": json.dumps(
                {
                    "apiVersion": "apiextensions.k8s.io/v1",
                    "kind": "CustomResourceDefinition",
                    "metadata": {"name": "widgets.example.com"},
                }
            ),
        },
    )
    converted = PLAIN.convert(root)
    assert converted.format == "plain+v0"
    assert [(o["kind"], o["metadata"]["name"]) for o in converted.objects] == [
        ("Namespace", "demo"),
        ("ConfigMap", "a"),
        ("ConfigMap", "b"),
        ("CustomResourceDefinition", "widgets.example.com"),
    ]
    assert converted.metadata == {"files": "01-ns.yaml,02-many.yml,03-crd.json", "objects": "4"}


def test_missing_empty_and_nested_manifests(tmp_path: Path) -> None:
    with pytest.raises(MissingManifestsError, match="no manifests/ directory"):
        PLAIN.convert(_bundle(tmp_path / "missing", {"README.md": "hi"}))
    (tmp_path / "empty" / "manifests").mkdir(parents=True)
    with pytest.raises(EmptyBundleError, match="zero objects"):
        PLAIN.convert(tmp_path / "empty")
    with pytest.raises(EmptyBundleError, match="zero objects"):
        PLAIN.convert(_bundle(tmp_path / "blank", {"manifests/a.yaml": "---\n# nothing\n"}))
    nested = _bundle(
        tmp_path / "nested",
        {
            "manifests/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
            "manifests/sub/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        },
    )
    with pytest.raises(NestedManifestsError, match="manifests/sub/"):
        PLAIN.convert(nested)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("- just\n- a list\n", "expected a Kubernetes object"),
        ("kind: ConfigMap\nmetadata: {name: a}\n", "no apiVersion"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "no kind"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: a-}\n", "no metadata.name"),
        ("apiVersion: v1\nkind: ConfigMap\n", "no metadata.name"),
        ("apiVersion: v1\nkind: [unclosed\n", "not valid YAML"),
        ("!!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ],
)
def test_invalid_objects_name_the_file(tmp_path: Path, content: str, match: str) -> None:
    root = _bundle(tmp_path, {"manifests/bad.yaml": content})
    with pytest.raises(InvalidManifestError, match=match) as caught:
        PLAIN.convert(root)
    assert "bad.yaml" in str(caught.value)


def test_alias_bomb_is_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = "\n".join(lines) + "\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n"
    root = _bundle(tmp_path, {"manifests/bomb.yaml": bomb})
    with pytest.raises(InvalidManifestError, match="alias bomb"):
        PLAIN.convert(root)


def test_recursive_alias_is_refused(tmp_path: Path) -> None:
    root = _bundle(tmp_path, {"manifests/loop.yaml": "a: &a [*a]\n"})
    with pytest.raises(InvalidManifestError, match="alias bomb"):
        PLAIN.convert(root)


def test_modest_aliases_are_fine(tmp_path: Path) -> None:
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l {app: x}\n"
        "  annotations: *l\n"
    )
    converted = PLAIN.convert(_bundle(tmp_path, {"manifests/a.yaml": doc}))
    assert converted.objects[0]["metadata"]["annotations"] == {"app": "x"}


def test_file_and_document_limits(tmp_path: Path) -> None:
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    root = _bundle(tmp_path, {"manifests/a.yaml": "---\n".join([doc] * 5)})
    with pytest.raises(InvalidManifestError, match="more than 3 documents"):
        PlainV0(ManifestLimits(max_documents=3)).convert(root)
    with pytest.raises(InvalidManifestError, match="over the 100-byte limit for one manifest file"):
        PlainV0(ManifestLimits(max_file_bytes=100)).convert(root)


def test_config_is_refused_and_unknown_formats(tmp_path: Path) -> None:
    root = _bundle(
        tmp_path, {"manifests/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"}
    )
    with pytest.raises(InvalidConfigError, match="no configuration"):
        PLAIN.convert(root, {"values": "x: 1"})
    with pytest.raises(FormatError, match="unknown bundle format 'helm\\+v3'"):
        format_for("helm+v3")
