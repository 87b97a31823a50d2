"""The loader: what it reads, where each object came from, .indexignore, the parsed cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resolver.catalog import cache as parsed_cache
from resolver.catalog import load as load_module
from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import load_directory, load_objects
from resolver.catalog.model import Origin
from tests.catalog.helpers import DATA


def test_json_stream_objects_carry_their_start_lines() -> None:
    root = DATA / "community-operators-prod-derived"
    catalog = load_directory(root, use_cache=False)
    lines = (root / "sosreport-operator" / "catalog.json").read_text().splitlines()
    objects = [*catalog.packages, *catalog.channels, *catalog.bundles]
    mine = [o for o in objects if o.origin and o.origin.path == "sosreport-operator/catalog.json"]
    assert len(mine) >= 3
    for obj in mine:
        assert obj.origin is not None
        assert lines[obj.origin.line - 1] == "{"
        assert f'"name": "{obj.name}"' in "\n".join(
            lines[obj.origin.line - 1 : obj.origin.line + 4]
        )


def test_yaml_documents_carry_their_first_content_line() -> None:
    root = DATA / "community-operators-prod-v4.20"
    catalog = load_directory(root, use_cache=False)
    for bundle in catalog.bundles:
        assert bundle.origin is not None
        text = (root / bundle.origin.path).read_text().splitlines()
        doc = text[bundle.origin.line - 1 :]
        end = next((i for i, ln in enumerate(doc) if ln.startswith("---")), len(doc))
        assert f"name: {bundle.name}" in doc[:end]


def test_model_content_of_a_real_package() -> None:
    catalog = load_directory(DATA / "certified-operators-v4.20", use_cache=False)
    pkg = catalog.package("appian-operator")
    assert pkg is not None
    assert pkg.default_channel == "alpha"
    assert pkg.icon is not None
    (channel,) = catalog.channels_of("appian-operator")
    assert [e.replaces for e in channel.entries][1] == "appian-operator.v0.171.0"
    bundle = catalog.bundle("appian-operator", "appian-operator.v0.205.0")
    assert bundle is not None
    assert bundle.version == "0.205.0"
    assert bundle.image.startswith("registry.connect.redhat.com/appian/")
    assert bundle.provided_apis
    assert bundle.csv_metadata.get("displayName")
    assert catalog.channel("appian-operator", "alpha") is channel
    assert catalog.channel("appian-operator", "beta") is None


def test_indexignore_excludes_files_like_opm() -> None:
    # catalogd's test catalog ignores expected_all.json, which repeats every object.
    catalog = load_directory(DATA / "catalogd-testdata", use_cache=False)
    assert [p.name for p in catalog.packages] == ["prometheus"]


def test_indexignore_patterns_apply_below_their_directory(tmp_path: Path) -> None:
    for rel in ("a/keep.yaml", "a/skip.yaml", "a/sub/skip.yaml", "b/skip.yaml", "a/sub/again.yaml"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"schema: x.custom\nname: {rel.replace('/', '-')}\n")
    (tmp_path / "a" / ".indexignore").write_text("# comment\nskip.yaml\nagain.yaml\n")
    (tmp_path / "a" / "sub" / ".indexignore").write_text("!again.yaml\n")
    catalog = load_directory(tmp_path, use_cache=False)
    assert sorted(o.name for o in catalog.others) == [
        "a-keep.yaml",
        "a-sub-again.yaml",
        "b-skip.yaml",
    ]


def test_unknown_schemas_are_kept_opaque(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text(
        '{"schema": "vendor.example/thing", "package": "p", "name": "n", "extra": [1, {"a": null}]}'
    )
    catalog = load_directory(tmp_path, use_cache=False)
    (meta,) = catalog.others
    assert (meta.schema, meta.package, meta.name) == ("vendor.example/thing", "p", "n")
    assert meta.blob["extra"] == [1, {"a": None}]


def test_load_objects_builds_a_catalog_or_reports_every_bad_object() -> None:
    good = {"schema": "olm.package", "name": "p", "defaultChannel": "c"}
    catalog = load_objects([(good, Origin("grpc"))], name="remote")
    assert catalog.name == "remote"
    assert catalog.package("p") is not None
    with pytest.raises(CatalogLoadError) as exc:
        load_objects([({"name": "x"}, Origin("a")), ({"schema": 3}, Origin("b"))])
    assert [p.origin for p in exc.value.problems] == [Origin("a"), Origin("b")]


def test_warm_reload_comes_from_the_cache_and_sees_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, cache = tmp_path / "catalog", tmp_path / "cache"
    for pkg in ("appian-operator", "eda-openshift-operator"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "catalog.yaml").write_bytes(
            (DATA / "certified-operators-v4.20" / pkg / "catalog.yaml").read_bytes()
        )
    cold = load_directory(root, cache_dir=str(cache))

    parsed: list[str] = []
    real = load_module._decode  # every file parsed goes through it

    def spy(parsed_file: object, relpath: str):  # type: ignore[no-untyped-def]
        parsed.append(relpath)
        return real(parsed_file, relpath)  # type: ignore[arg-type]

    monkeypatch.setattr(load_module, "_decode", spy)
    warm = load_directory(root, cache_dir=str(cache))
    assert parsed == []
    assert warm == cold

    path = root / "eda-openshift-operator" / "catalog.yaml"
    path.write_text(path.read_text().replace('defaultChannel: "6.0"', "defaultChannel: stable"))
    changed = load_directory(root, cache_dir=str(cache))
    assert parsed == ["eda-openshift-operator/catalog.yaml"]
    pkg = changed.package("eda-k8s-operator")
    assert pkg is not None
    assert pkg.default_channel == "stable"

    os.unlink(path)
    assert load_directory(root, cache_dir=str(cache)).package("eda-k8s-operator") is None


def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    root, cache = DATA / "catalogd-testdata", tmp_path / "cache"
    first = load_directory(root, cache_dir=str(cache))
    (cache_file,) = cache.iterdir()
    cache_file.write_bytes(b"not a cache")
    assert load_directory(root, cache_dir=str(cache)) == first
    assert cache_file.read_bytes().startswith(parsed_cache._MAGIC)  # rebuilt
    assert parsed_cache.read(str(cache), str(root)).files


def test_default_cache_dir_follows_pivoter_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIVOTER_CACHE", "/somewhere")
    assert parsed_cache.default_cache_dir() == "/somewhere/catalogs"


def test_inline_bundle_objects_decode_to_manifests() -> None:
    catalog = load_directory(DATA / "community-operators-prod-v4.16", use_cache=False)
    bundle = next(b for b in catalog.bundles if b.objects)
    kinds = {__import__("json").loads(o)["kind"] for o in bundle.objects}
    assert "ClusterServiceVersion" in kinds
    assert '"kind":"ClusterServiceVersion"' in bundle.csv_json
