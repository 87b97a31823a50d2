"""The path ``catalog test --live`` walks (pure: no cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pivoter.cli.catalog_live import PathError, live_path
from resolver.channeltest.loading import load_for_test


def _catalog(tmp_path: Path) -> Path:
    def bundle(version: str) -> dict[str, object]:
        return {
            "schema": "olm.bundle",
            "name": f"app.v{version}",
            "package": "app",
            "image": f"example.com/app:{version}",
            "properties": [
                {"type": "olm.package", "value": {"packageName": "app", "version": version}}
            ],
        }

    docs = [
        {"schema": "olm.package", "name": "app", "defaultChannel": "stable"},
        {
            "schema": "olm.channel",
            "name": "stable",
            "package": "app",
            "entries": [
                {"name": "app.v1.0.0"},
                {"name": "app.v1.1.0", "replaces": "app.v1.0.0"},
                {"name": "app.v1.2.0", "replaces": "app.v1.1.0", "skips": ["app.v1.0.0"]},
            ],
        },
        {
            "schema": "olm.channel",
            "name": "fast",
            "package": "app",
            "entries": [{"name": "app.v1.2.0"}],
        },
        bundle("1.0.0"),
        bundle("1.1.0"),
        bundle("1.2.0"),
    ]
    (tmp_path / "catalog.yaml").write_text(yaml.safe_dump_all(docs))
    return tmp_path


def test_the_path_follows_the_resolvers_successor_from_the_lowest_version(tmp_path: Path) -> None:
    catalog, _ = load_for_test(str(_catalog(tmp_path)), use_cache=False)
    path = live_path(catalog, "app")
    assert (path.channel, path.versions) == ("stable", ("1.0.0", "1.2.0"))  # 1.2.0 skips 1.0.0
    assert live_path(catalog, "app", start="1.1.0").versions == ("1.1.0", "1.2.0")
    assert live_path(catalog, "app", "fast").versions == ("1.2.0",)


@pytest.mark.parametrize(
    ("package", "channel", "start", "message"),
    [
        ("nope", "", "", "package nope is not in the catalog"),
        ("app", "beta", "", "package app has no channel beta"),
        ("app", "", "0.1.0", "has no entry of version 0.1.0 (it has 1.0.0, 1.1.0, 1.2.0)"),
    ],
)
def test_what_cannot_be_walked_is_refused(
    tmp_path: Path, package: str, channel: str, start: str, message: str
) -> None:
    catalog, _ = load_for_test(str(_catalog(tmp_path)), use_cache=False)
    with pytest.raises(PathError, match=message.replace("(", r"\(").replace(")", r"\)")):
        live_path(catalog, package, channel, start)
