"""The configMaps source: ConfigMap data mapped to files (pure logic, real files)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from provisioners.errors import ContentTooLargeError, InvalidSourceError
from provisioners.formats import format_for
from provisioners.sources import ConfigMapContent, ConfigMapsSpec, FetchOptions, fetch
from provisioners.unpack import UnpackLimits

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n"


def test_configmaps_become_files(dest: Path) -> None:
    spec = ConfigMapsSpec(
        (
            ConfigMapContent(
                "objects", {"a.yaml": CM.format("a"), "b.yaml": CM.format("b")}, path="manifests"
            ),
            ConfigMapContent(
                "extra",
                binary_data={"logo.png": base64.b64encode(b"\x89PNG").decode()},
                path="assets/img",
            ),
        )
    )
    result = fetch(spec, dest)
    names = [o["metadata"]["name"] for o in format_for("plain+v0").convert(dest).objects]
    assert names == ["a", "b"]
    assert (dest / "assets" / "img" / "logo.png").read_bytes() == b"\x89PNG"
    assert result.resolved_source["configMaps"][0] == {
        "configMap": {"name": "objects"},
        "path": "manifests",
    }
    other = dest.parent / "again"
    other.mkdir()
    assert fetch(spec, other).revision == result.revision  # same data, same revision


@pytest.mark.parametrize(
    ("config_maps", "match"),
    [
        ((), "lists no ConfigMaps"),
        ((ConfigMapContent("x", {"a": "1"}, path="../up"),), "leaves the bundle root"),
        ((ConfigMapContent("x", {"a": "1"}, path="/abs"),), "absolute"),
        ((ConfigMapContent("x", {"../a": "1"}),), "not a valid file name"),
        ((ConfigMapContent("x", {"..": "1"}),), "not a valid file name"),
        ((ConfigMapContent("x"),), "has no data"),
        (
            (
                ConfigMapContent("one", {"a": "1"}, path="m"),
                ConfigMapContent("two", {"a": "2"}, path="m"),
            ),
            "one and two both write m/a",
        ),
        (
            (ConfigMapContent("one", {"m": "1"}), ConfigMapContent("two", {"a": "2"}, path="m")),
            "both a file and a directory",
        ),
        ((ConfigMapContent("x", binary_data={"b": "not base64!"}),), "not base64"),
    ],
)
def test_invalid_configmaps(
    config_maps: tuple[ConfigMapContent, ...], match: str, dest: Path
) -> None:
    with pytest.raises(InvalidSourceError, match=match):
        fetch(ConfigMapsSpec(config_maps), dest)
    assert list(dest.iterdir()) == []


def test_size_limit(dest: Path) -> None:
    spec = ConfigMapsSpec((ConfigMapContent("big", {"a": "x" * 2000}),))
    with pytest.raises(ContentTooLargeError, match="max_total_bytes=1000"):
        fetch(spec, dest, FetchOptions(limits=UnpackLimits(max_total_bytes=1000)))
