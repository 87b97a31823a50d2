"""opm as the referee: pivoter agrees with `opm validate` and `opm render` on real and broken data.

Each broken catalog is derived from a real one (certified-operators appian-operator: one channel of
four bundles) by one mutation. Both tools must reject it, and both messages must name the same
defect (a keyword both use); ours must also carry the expected category and a file:line.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from resolver.catalog.load import load_directory
from resolver.catalog.render import write_json
from tests.catalog.helpers import (
    CATALOGS,
    DATA,
    opm_render,
    opm_validate,
    our_validate,
    read_docs,
    split_json_stream,
    write_catalog,
)

pytestmark = pytest.mark.opm

BASE = DATA / "certified-operators-v4.20" / "appian-operator" / "catalog.yaml"
PKG = "appian-operator"
B = [f"{PKG}.v0.171.0", f"{PKG}.v0.184.0", f"{PKG}.v0.200.0", f"{PKG}.v0.205.0"]

Objects = list[dict[str, Any]]


def base_objects() -> Objects:
    """The real appian-operator package: a package, channel alpha (B[0] <- ... <- B[3]), bundles."""
    return read_docs(BASE)


def _channel(objs: Objects) -> dict[str, Any]:
    return next(o for o in objs if o["schema"] == "olm.channel")


def _package(objs: Objects) -> dict[str, Any]:
    return next(o for o in objs if o["schema"] == "olm.package")


def _bundle(objs: Objects, name: str) -> dict[str, Any]:
    return next(o for o in objs if o["schema"] == "olm.bundle" and o["name"] == name)


def _entries(*entries: dict[str, Any]) -> Callable[[Objects], None]:
    def mutate(objs: Objects) -> None:
        _channel(objs)["entries"] = list(entries)

    return mutate


def _cycle(objs: Objects) -> None:
    _entries(
        {"name": B[3], "replaces": B[2]},
        {"name": B[2], "replaces": B[1]},
        {"name": B[1], "replaces": B[2]},
        {"name": B[0], "replaces": B[1]},
    )(objs)
    # B[0] replaces B[1] but nothing reaches B[0]: keep it out so the only defect is the cycle.
    _channel(objs)["entries"].pop()
    objs.remove(_bundle(objs, B[0]))


def _stranded(objs: Objects) -> None:
    _entries(
        {"name": B[3], "replaces": B[2]},
        {"name": B[2]},
        {"name": B[1], "replaces": B[0]},
        {"name": B[0], "replaces": B[1]},
    )(objs)


def _entry_without_bundle(objs: Objects) -> None:
    _channel(objs)["entries"].append({"name": f"{PKG}.v9.9.9", "replaces": B[3]})


def _duplicate_version(objs: Objects) -> None:
    for prop in _bundle(objs, B[1])["properties"]:
        if prop["type"] == "olm.package":
            prop["value"]["version"] = "0.200.0"


def _bad_skip_range(objs: Objects) -> None:
    _channel(objs)["entries"][-1]["skipRange"] = ">=0.1.0 <<0.205.0 !!"


def _missing_default_channel(objs: Objects) -> None:
    _package(objs)["defaultChannel"] = "nightly-missing"


def _unset_default_channel(objs: Objects) -> None:
    del _package(objs)["defaultChannel"]


def _bad_deprecation_reference(objs: Objects) -> None:
    objs.append(
        {
            "schema": "olm.deprecations",
            "package": PKG,
            "entries": [
                {"reference": {"schema": "olm.bundle", "name": f"{PKG}.v0.0.1"}, "message": "x"}
            ],
        }
    )


def _deprecation_without_message(objs: Objects) -> None:
    objs.append(
        {
            "schema": "olm.deprecations",
            "package": PKG,
            "entries": [{"reference": {"schema": "olm.channel", "name": "alpha"}, "message": ""}],
        }
    )


def _missing_schema(objs: Objects) -> None:
    del _bundle(objs, B[2])["schema"]


def _bad_package_name(objs: Objects) -> None:
    for obj in objs:
        if obj["schema"] == "olm.package":
            obj["name"] = "Appian_Operator"
        else:
            obj["package"] = "Appian_Operator"
        for prop in obj.get("properties", []):
            if prop["type"] == "olm.package":
                prop["value"]["packageName"] = "Appian_Operator"


def _two_package_properties(objs: Objects) -> None:
    props = _bundle(objs, B[1])["properties"]
    props.append({"type": "olm.package", "value": {"packageName": PKG, "version": "0.184.1"}})


def _duplicate_package(objs: Objects) -> None:
    objs.append(copy.deepcopy(_package(objs)))


def _duplicate_bundle(objs: Objects) -> None:
    objs.append(copy.deepcopy(_bundle(objs, B[1])))


def _bundle_in_no_channel(objs: Objects) -> None:
    extra = copy.deepcopy(_bundle(objs, B[1]))
    extra["name"] = f"{PKG}.v0.999.0"
    for prop in extra["properties"]:
        if prop["type"] == "olm.package":
            prop["value"]["version"] = "0.999.0"
    objs.append(extra)


def _bad_version(objs: Objects) -> None:
    for prop in _bundle(objs, B[2])["properties"]:
        if prop["type"] == "olm.package":
            prop["value"]["version"] = "v0.200"


def _bad_image(objs: Objects) -> None:
    _bundle(objs, B[2])["image"] = "registry.example.com/Appian/Bundle:v1"


def _channel_of_unknown_package(objs: Objects) -> None:
    objs.append(
        {"schema": "olm.channel", "package": "nobody", "name": "x", "entries": [{"name": "x.v1"}]}
    )


def _package_property_mismatch(objs: Objects) -> None:
    for prop in _bundle(objs, B[2])["properties"]:
        if prop["type"] == "olm.package":
            prop["value"]["packageName"] = "someone-else"


# (mutation, our category, keyword opm's message and ours both contain)
CASES: dict[str, tuple[Callable[[Objects], None], str, str]] = {
    "cycle": (_cycle, "cycle", "cycle"),
    "two-heads": (
        _entries(
            {"name": B[3], "replaces": B[0]},
            {"name": B[2], "replaces": B[1]},
            {"name": B[1]},
            {"name": B[0]},
        ),
        "multiple-heads",
        "multiple channel heads",
    ),
    "no-head": (
        _entries(
            {"name": B[3], "replaces": B[2]},
            {"name": B[2], "replaces": B[1]},
            {"name": B[1], "replaces": B[0]},
            {"name": B[0], "replaces": B[3]},
        ),
        "no-head",
        "no channel head",
    ),
    "stranded-entry": (_stranded, "stranded", "stranded"),
    "entry-without-bundle": (_entry_without_bundle, "missing-bundle", "no olm.bundle blobs found"),
    "duplicate-version": (_duplicate_version, "duplicate-version", "duplicate versions"),
    "bad-skip-range": (_bad_skip_range, "skip-range", "skipRange"),
    "missing-default-channel": (
        _missing_default_channel,
        "default-channel",
        "channel must contain at least one bundle",
    ),
    "unset-default-channel": (
        _unset_default_channel,
        "default-channel",
        "default channel must be set",
    ),
    "bad-deprecation-reference": (
        _bad_deprecation_reference,
        "deprecation-reference",
        "bundle not found",
    ),
    "deprecation-without-message": (
        _deprecation_without_message,
        "deprecation",
        "message must be set",
    ),
    "missing-schema": (_missing_schema, "load", "schema"),
    "bad-package-name": (_bad_package_name, "package-name", "invalid package name"),
    "two-olm-package-properties": (_two_package_properties, "package-property", "exactly 1"),
    "package-property-mismatch": (_package_property_mismatch, "package-property", "does not match"),
    "duplicate-package": (_duplicate_package, "duplicate-package", "duplicate package"),
    "duplicate-bundle": (_duplicate_bundle, "duplicate-bundle", "duplicate bundle"),
    "bundle-in-no-channel": (
        _bundle_in_no_channel,
        "not-in-channel",
        "not found in any channel entries",
    ),
    "bad-version": (_bad_version, "version", "v0.200"),
    "bad-image": (_bad_image, "image", "invalid image pull spec"),
    "channel-of-unknown-package": (
        _channel_of_unknown_package,
        "unknown-package",
        "unknown package",
    ),
}


def test_base_of_broken_catalogs_is_valid_for_both(tmp_path: Path) -> None:
    write_catalog(tmp_path, base_objects())
    assert opm_validate(tmp_path).passed
    assert our_validate(tmp_path, use_cache=False).passed


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("as_json", [False, True], ids=["yaml", "json"])
def test_broken_catalog_same_verdict_and_defect(tmp_path: Path, case: str, as_json: bool) -> None:
    mutate, category, keyword = CASES[case]
    objs = base_objects()
    mutate(objs)
    path = write_catalog(tmp_path, objs, as_json=as_json)
    theirs = opm_validate(tmp_path)
    ours = our_validate(tmp_path, use_cache=False)
    assert not theirs.passed, f"opm accepted {case}"
    assert not ours.passed, f"pivoter accepted {case}"
    assert keyword.lower() in theirs.text.lower(), theirs.text
    matching = [m for m, c in zip(ours.messages, ours.categories, strict=True) if c == category]
    assert matching, f"no {category} finding in {ours.messages}"
    assert any(keyword.lower() in m.lower() for m in matching), matching
    # every finding names the file and the line of the object it is about
    assert all(m.startswith(f"{path.name}:") for m in matching), matching
    assert all(m.split(":", 2)[1].isdigit() and int(m.split(":", 2)[1]) > 0 for m in matching)


@pytest.mark.parametrize("name", CATALOGS)
def test_real_catalog_subsets_same_verdict(name: str) -> None:
    directory = DATA / name
    theirs = opm_validate(directory)
    ours = our_validate(directory, use_cache=False)
    assert ours.passed == theirs.passed, (theirs.text, ours.messages)
    if not theirs.passed:
        # operator-registry's testdata merges two index versions: opm stops at the first
        # duplicate package; we report it together with everything else.
        assert "duplicate package" in theirs.text
        assert "duplicate-package" in ours.categories


def test_inline_bundle_objects_subset_has_them() -> None:
    catalog = load_directory(DATA / "community-operators-prod-v4.16", use_cache=False)
    with_objects = [b for b in catalog.bundles if b.objects]
    assert with_objects
    assert all(b.csv_json.startswith("{") for b in with_objects)


@pytest.mark.parametrize("name", CATALOGS)
def test_render_equals_opm_render(name: str) -> None:
    directory = DATA / name
    theirs = opm_render(directory)
    buf = io.BytesIO()
    write_json(load_directory(directory, use_cache=False), buf)
    ours = buf.getvalue()
    our_objects = split_json_stream(ours)
    their_objects = split_json_stream(theirs)
    assert len(our_objects) == len(their_objects)
    if name == "operator-registry-testdata":
        # Duplicate packages: opm's concurrent loader orders the duplicates arbitrarily.
        key = repr
        assert sorted(our_objects, key=key) == sorted(their_objects, key=key)
    else:
        assert our_objects == their_objects
        assert ours == theirs  # byte for byte, key order and indentation included


def test_render_cli_matches_opm(tmp_path: Path) -> None:
    import subprocess
    import sys

    directory = DATA / "certified-operators-v4.20"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pivoter.cli.main",
            "catalog",
            "render",
            str(directory),
            "--no-cache",
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert split_json_stream(result.stdout) == split_json_stream(opm_render(directory))


def _with_bundle_field(objs: Objects, field: str, value: str) -> None:
    bundle = _bundle(objs, B[3])
    if field == "version":
        for prop in bundle["properties"]:
            if prop["type"] == "olm.package":
                prop["value"]["version"] = value
    elif field == "skipRange":
        _channel(objs)["entries"][-1]["skipRange"] = value
    else:
        bundle[field] = value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("skipRange", ">=0.1.0 <0.205.0"),
        ("skipRange", ">=4.1.0-0 <4.2.0-0"),
        ("skipRange", ">=1.22.8 < 1.23.0"),
        ("skipRange", "<=v0.10.1"),
        ("skipRange", "1.x"),
        ("skipRange", ">1.0.0 || <0.5.0"),
        ("skipRange", "!1.0.0"),
        ("skipRange", ">= 1.0.0"),
        ("skipRange", "<1.0"),
        ("skipRange", "~1.2.3"),
        ("version", "0.205"),
        ("version", "v0.205.0"),
        ("version", "00.205.0"),
        ("version", "0.205.0-01"),
        ("version", "0.205.0+build.01"),
        ("version", "0.205.0-rc.1+b"),
        ("image", "oci://quay.io/kuadrant/wasm-shim:v0.1.0"),
        ("image", "quay.io/Upper/bundle:v1"),
        ("image", "Quay.IO/lower/bundle:v1"),
        ("image", "localhost:5000/a/b:tag"),
        ("image", "bundle@sha256:abc"),
        ("image", "a/b:tag@sha256:" + "a" * 64),
        ("image", "a/b@sha512:" + "a" * 64),
        ("image", "a" * 64),
        ("image", "a/b:" + "t" * 129),
        ("image", "a//b"),
    ],
)
def test_syntax_of_ranges_versions_and_images_agrees_with_opm(
    tmp_path: Path, field: str, value: str
) -> None:
    objs = base_objects()
    _with_bundle_field(objs, field, value)
    write_catalog(tmp_path, objs, as_json=True)
    theirs = opm_validate(tmp_path)
    ours = our_validate(tmp_path, use_cache=False)
    assert ours.passed == theirs.passed, (theirs.text, ours.messages)


@pytest.mark.parametrize(
    ("release", "rename", "version"),
    [
        ("2", True, "0.205.0"),
        ("2", False, "0.205.0"),
        ("rc.1", True, "0.205.0"),
        ("01", True, "0.205.0"),
        ("x" * 21, True, "0.205.0"),
        ("2", True, "0.205.0+build"),
    ],
)
def test_release_rules_agree_with_opm(
    tmp_path: Path, release: str, rename: bool, version: str
) -> None:
    objs = base_objects()
    bundle = _bundle(objs, B[3])
    for prop in bundle["properties"]:
        if prop["type"] == "olm.package":
            prop["value"].update(version=version, release=release)
    if rename:
        new = f"{PKG}-v{version}-{release}"
        bundle["name"] = new
        _channel(objs)["entries"][-1]["name"] = new
    write_catalog(tmp_path, objs)
    theirs = opm_validate(tmp_path)
    ours = our_validate(tmp_path, use_cache=False)
    assert ours.passed == theirs.passed, (theirs.text, ours.messages)
