"""Bad input: every broken file is reported (file and line), all at once, never half-loaded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resolver.catalog.errors import CatalogLoadError
from resolver.catalog.load import DEFAULT_MAX_FILE_BYTES, load_directory
from resolver.catalog.model import Catalog
from tests.catalog.helpers import opm_validate
from tests.tools import SHARED, requires_shared

GOOD = """\
schema: olm.package
name: good
defaultChannel: stable
---
schema: olm.channel
package: good
name: stable
entries:
  - name: good.v1.0.0
---
schema: olm.bundle
package: good
name: good.v1.0.0
image: quay.io/example/good-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: good, version: 1.0.0}
"""


def _load_fails(root: Path, **kwargs: object) -> CatalogLoadError:
    result: Catalog | None = None
    with pytest.raises(CatalogLoadError) as exc:
        result = load_directory(root, use_cache=False, **kwargs)  # type: ignore[arg-type]
    assert result is None  # never a half-loaded catalog
    return exc.value


def _good(root: Path) -> None:
    (root / "good").mkdir(parents=True)
    (root / "good" / "catalog.yaml").write_text(GOOD)


def test_good_catalog_loads(tmp_path: Path) -> None:
    _good(tmp_path)
    catalog = load_directory(tmp_path, use_cache=False)
    assert [b.name for b in catalog.bundles] == ["good.v1.0.0"]
    assert catalog.bundles[0].origin is not None
    assert str(catalog.bundles[0].origin) == "good/catalog.yaml:11"


def test_malformed_yaml_and_json_reported_together_with_lines(tmp_path: Path) -> None:
    _good(tmp_path)
    (tmp_path / "b.yaml").write_text(
        "schema: olm.package\nname: b\n---\nschema: olm.channel\n  name: [unclosed\n"
    )
    (tmp_path / "c.json").write_text(
        '{"schema": "olm.package", "name": "c"}\n{"schema": "olm.package",\n "name": "d",}\n'
    )
    err = _load_fails(tmp_path)
    by_file = {p.origin.path: p for p in err.problems if p.origin}
    assert set(by_file) == {"b.yaml", "c.json"}
    assert by_file["b.yaml"].origin is not None
    assert by_file["b.yaml"].origin.line == 5
    assert "invalid YAML" in by_file["b.yaml"].message
    assert by_file["c.json"].origin is not None
    assert by_file["c.json"].origin.line == 3
    assert "invalid JSON" in by_file["c.json"].message
    assert not err.io


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_bytes(b"schema: olm.package\nname: x\ndescription: caf\xe9\n")
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert str(problem.origin) == "bad.yaml:3"
    assert "UTF-8" in problem.message


def test_huge_file_refused_by_size_without_reading_it(tmp_path: Path) -> None:
    _good(tmp_path)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:  # sparse: takes no disk space and no time
        f.truncate(DEFAULT_MAX_FILE_BYTES + 1)
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert problem.origin is not None
    assert problem.origin.path == "huge.json"
    assert "limit" in problem.message
    assert f"{DEFAULT_MAX_FILE_BYTES:,}" in problem.message


@requires_shared  # every real catalog file: the largest are not in tests/data
def test_size_limit_is_above_every_real_catalog_file() -> None:
    sizes = [
        p.stat().st_size
        for p in (SHARED / "catalogs").rglob("*")
        if p.is_file() and not p.is_symlink()
    ]
    assert sizes
    assert max(sizes) < DEFAULT_MAX_FILE_BYTES


BILLION_LAUGHS = """\
schema: olm.package
name: lol
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_yaml_alias_bomb_refused(tmp_path: Path) -> None:
    (tmp_path / "lol.yaml").write_text(BILLION_LAUGHS)
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert str(problem.origin) == "lol.yaml:1"
    assert "alias" in problem.message


def test_modest_yaml_aliases_still_load(tmp_path: Path) -> None:
    (tmp_path / "ok.yaml").write_text(
        "schema: x.custom\nname: thing\nbase: &base {k: v}\ncopy: *base\n"
    )
    catalog = load_directory(tmp_path, use_cache=False)
    assert catalog.others[0].blob["copy"] == {"k": "v"}


def test_symlink_loop_and_escape_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "catalog"
    _good(root)
    os.symlink("loop.yaml", root / "loop.yaml")
    outside = tmp_path / "outside.yaml"
    outside.write_text(GOOD)
    os.symlink(outside, root / "escape.yaml")
    os.symlink("good", root / "dirlink")
    os.symlink("nowhere.yaml", root / "dangling.yaml")
    err = _load_fails(root)
    messages = {p.origin.path: p.message for p in err.problems if p.origin}
    assert "loop" in messages["loop.yaml"]
    assert "leaves the catalog root" in messages["escape.yaml"]
    assert "directory" in messages["dirlink"]
    assert "dangling.yaml" in messages
    assert err.io


def test_symlink_to_a_file_inside_the_root_is_followed(tmp_path: Path) -> None:
    _good(tmp_path)
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "custom.yaml").write_text("schema: x.custom\nname: thing\n")
    os.symlink("extra/custom.yaml", tmp_path / "alias.yaml")
    catalog = load_directory(tmp_path, use_cache=False)
    assert sorted(o.origin.path for o in catalog.others if o.origin) == [
        "alias.yaml",
        "extra/custom.yaml",
    ]


def test_object_without_schema_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD + "---\n# a comment\nname: orphan\npackage: good\n")
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert str(problem.origin) == "a.yaml:20"
    assert "schema" in problem.message


def test_wrong_field_type_is_a_load_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD.replace("defaultChannel: stable", "defaultChannel: [x]"))
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert str(problem.origin) == "a.yaml:1"
    assert "defaultChannel" in problem.message
    assert "string" in problem.message


def test_broken_file_is_not_masked_by_the_cache(tmp_path: Path) -> None:
    root, cache = tmp_path / "c", tmp_path / "cache"
    _good(root)
    assert load_directory(root, cache_dir=str(cache)).packages
    (root / "good" / "catalog.yaml").write_text(GOOD + "---\n{ broken\n")
    with pytest.raises(CatalogLoadError):
        load_directory(root, cache_dir=str(cache))


@pytest.mark.opm
@pytest.mark.parametrize(
    ("text", "valid"),
    [
        pytest.param("# only a comment\n---\n" + GOOD, False, id="comment-only-document"),
        pytest.param(GOOD + "---\n\n", False, id="blank-trailing-document"),
        pytest.param(GOOD + "---\n", True, id="trailing-separator"),
        pytest.param(GOOD.replace("name: good.v1.0.0\n", "name: y\n"), False, id="yaml-1.1-bool"),
        pytest.param(
            GOOD.replace("schema: olm.package", "Schema: olm.package"), True, id="key-case"
        ),
        pytest.param(GOOD.replace("name: good\n", "name: good\nNAME: good\n"), False, id="dup-key"),
        pytest.param(GOOD + "---\nschema: x.custom\ndate: 2024-01-01\n", True, id="timestamp"),
        pytest.param(GOOD.replace("---", "--- foo", 1), False, id="bad-separator"),
    ],
)
def test_yaml_edge_cases_agree_with_opm(tmp_path: Path, text: str, valid: bool) -> None:
    (tmp_path / "catalog.yaml").write_text(text)
    assert opm_validate(tmp_path).passed is valid
    try:
        load_directory(tmp_path, use_cache=False)
        loaded = True
    except CatalogLoadError:
        loaded = False
    assert loaded is valid


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("flow.yaml", "schema: x.custom\nname: deep\nd: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (
            "block.yaml",
            "schema: x.custom\nname: deep\nd:\n" + "".join(" " * i + "- \n" for i in range(400)),
        ),
        ("deep.json", '{"schema": "x.custom", "d": ' + "[" * 100_000 + "]" * 100_000 + "}\n"),
    ],
)
def test_deeply_nested_documents_are_refused_not_crashing(
    tmp_path: Path, name: str, text: str
) -> None:
    # libyaml's composer recurses on the C stack: unguarded, this would kill the process.
    (tmp_path / name).write_text(text)
    err = _load_fails(tmp_path)
    (problem,) = err.problems
    assert problem.origin is not None
    assert problem.origin.path == name
    assert "nested" in problem.message
