"""Versions and ranges: blang (catalog) and Masterminds (user) dialects, examples and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from resolver.versions import (
    RangeSyntaxError,
    Syntax,
    Version,
    VersionSyntaxError,
    parse_range,
    parse_strict_version,
    parse_version,
)

# ------------------------------------------------------------------ examples


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.2.3", "1.2.3"),
        ("v1.2.3", "1.2.3"),
        (" 1.2 ", "1.2.0"),
        ("1", "1.0.0"),
        ("01.02.03", "1.2.3"),
        ("1.0.0-rc.1+build.5", "1.0.0-rc.1+build.5"),
        ("4.1.0-0", "4.1.0-0"),
    ],
)
def test_parse_version_tolerates_catalog_spellings(text: str, expected: str) -> None:
    assert str(parse_version(text)) == expected


@pytest.mark.parametrize("text", ["", "abc", "1.2.3.4", "1.0.0-", "1.0.0-a..b", "1.0.0+"])
def test_parse_version_rejects_non_versions(text: str) -> None:
    with pytest.raises(VersionSyntaxError, match="invalid version"):
        parse_version(text)


def test_strict_version_rejects_tolerated_forms() -> None:
    for text in ("v1.0.0", "1.0", "01.0.0"):
        with pytest.raises(VersionSyntaxError):
            parse_strict_version(text)


def test_build_metadata_is_ignored_in_ordering() -> None:
    assert parse_version("1.0.0+a") == parse_version("1.0.0+b")
    assert parse_range("=1.0.0").contains("1.0.0+x")


BLANG_CASES = [
    (">=1.0.0 <2.0.0", {"1.0.0": True, "1.9.9": True, "2.0.0": False, "0.9.0": False}),
    (">=1.22.8 < 1.23.0", {"1.22.8": True, "1.22.10": True, "1.23.0": False}),
    # blang has no prerelease rule: plain ordering, so -0 bounds work as catalogs intend.
    (">=4.1.0-0 <4.2.0-0", {"4.1.0-rc.1": True, "4.1.7": True, "4.2.0-0": False, "4.0.9": False}),
    ("<1.0.0", {"0.1.0": True, "1.0.0-alpha": True, "1.0.0": False}),
    ("1.0.1", {"1.0.1": True, "1.0.2": False}),
    ("!=1.0.1", {"1.0.1": False, "1.0.2": True}),
    ("!1.0.1", {"1.0.1": False, "1.0.0": True}),
    ("==1.0.1", {"1.0.1": True}),
    ("<2.0.0 || >=3.0.0", {"1.5.0": True, "2.5.0": False, "3.1.0": True}),
    (">1.0.0 <3.0.0 !2.0.3-beta.2", {"2.0.3-beta.2": False, "2.0.3": True, "1.0.0": False}),
    ("1.x", {"1.0.0": True, "1.9.0": True, "2.0.0": False}),
    ("1.2.x", {"1.2.0": True, "1.2.9": True, "1.3.0": False}),
    ("<=1.2.x", {"1.2.9": True, "1.3.0": False}),
    (">1.2.x", {"1.2.9": False, "1.3.0": True}),
    ("!=1.x", {"1.5.0": False, "0.5.0": True, "2.0.0": True}),
    ("<v2.4.0", {"2.3.9": True, "2.4.0": False}),
]


@pytest.mark.parametrize(("text", "expected"), BLANG_CASES)
def test_blang_ranges(text: str, expected: dict[str, bool]) -> None:
    rng = parse_range(text, "blang")
    assert {v: rng.contains(v) for v in expected} == expected


MASTERMINDS_CASES = [
    ("^1.2", {"1.2.0": True, "1.9.9": True, "2.0.0": False, "1.1.0": False}),
    ("^1.2.3", {"1.2.3": True, "1.2.2": False, "1.99.0": True, "2.0.0": False}),
    ("^0.2.3", {"0.2.3": True, "0.2.9": True, "0.3.0": False}),
    ("^0.0.3", {"0.0.3": True, "0.0.4": False}),
    ("^0", {"0.9.0": True, "1.0.0": False}),
    ("~1.2.3", {"1.2.3": True, "1.2.9": True, "1.3.0": False, "1.2.2": False}),
    ("~1", {"1.0.0": True, "1.9.0": True, "2.0.0": False}),
    ("~>1.2", {"1.2.0": True, "1.3.0": False}),
    ("1.x", {"1.0.0": True, "1.5.0": True, "2.0.0": False}),
    ("1.2.X", {"1.2.0": True, "1.3.0": False}),
    ("*", {"0.0.1": True, "9.9.9": True, "1.0.0-rc.1": False}),
    ("1.2", {"1.2.0": True, "1.2.7": True, "1.3.0": False}),
    ("=1.2.3", {"1.2.3": True, "1.2.4": False}),
    ("1.2 - 1.4", {"1.1.9": False, "1.2.0": True, "1.4.8": True, "1.5.0": False}),
    ("1.2.3 - 2.3.4", {"1.2.3": True, "2.3.4": True, "2.3.5": False}),
    ("v1.2 - v1.4", {"1.1.9": False, "1.3.0": True, "1.5.0": False}),
    ("1.2.3-rc.1 - 1.4", {"1.2.3": True, "1.2.2": False, "1.4.1": True, "1.4.2-rc.1": False}),
    ("1.0 - 1.1 || 2.0 - 2.1", {"1.1.5": True, "1.5.0": False, "2.1.0": True, "2.2.0": False}),
    (">=1.0.0, 1.2 - 1.4", {"1.1.0": False, "1.3.0": True}),
    (">= 1.2, < 2", {"1.2.0": True, "1.99.0": True, "2.0.0": False}),
    (">=1.2 <2", {"1.5.0": True, "2.0.0": False}),
    (">1", {"1.9.0": False, "2.0.0": True}),
    (">1.2", {"1.2.9": False, "1.3.0": True}),
    ("<=1.4", {"1.4.9": True, "1.5.0": False}),
    ("!=1.2.x", {"1.2.5": False, "1.3.0": True}),
    ("1.0.0 || >=2.0.0", {"1.0.0": True, "1.5.0": False, "2.5.0": True}),
    (">=v1.0.0", {"1.0.0": True}),
    # Masterminds: a term without a prerelease never matches a prerelease version...
    (">=1.0.0", {"1.5.0-rc.1": False, "1.5.0": True}),
    # ...but a term that names a prerelease admits prereleases.
    (">=1.0.0-0", {"1.5.0-rc.1": True, "0.9.0": False}),
]


@pytest.mark.parametrize(("text", "expected"), MASTERMINDS_CASES)
def test_masterminds_ranges(text: str, expected: dict[str, bool]) -> None:
    rng = parse_range(text, "masterminds")
    assert {v: rng.contains(v) for v in expected} == expected


@pytest.mark.timeout(60)  # quadratic parsing took minutes here (21 s for 20,000 digits)
@pytest.mark.parametrize("syntax", ["blang", "masterminds"])
@pytest.mark.parametrize(
    "text",
    [
        "9" * 200_000,
        ">=" + "9" * 200_000,
        "1 - " + "9" * 200_000,
        "9" * 200_000 + " - 1",
        "1.0.0-" + "a." * 100_000 + "!",
        "1.0.0 || " * 20_000 + "!",
    ],
)
def test_long_hostile_ranges_end_in_linear_time(text: str, syntax: Syntax) -> None:
    """A range comes from catalogs and users: none can make the parser backtrack quadratically
    (a number past 2^64-1 or a stray character is a syntax error, found in one pass)."""
    with pytest.raises(RangeSyntaxError):
        parse_range(text, syntax)


@pytest.mark.parametrize(
    ("text", "syntax", "token"),
    [
        (">=1.0.0 zz", "blang", "zz"),
        ("~1.0.0", "blang", "~"),
        (">=1.0.0 <1.31.0-", "blang", "<1.31.0-"),
        ("|| 1.0.0", "blang", "||"),
        ("1.0.0 ||", "blang", "||"),
        ("foobar", "masterminds", "foobar"),
        (">=1.0.0 ~>>2", "masterminds", "~>>2"),
        ("1.0.0 || ", "masterminds", "||"),
        ("", "masterminds", "empty"),
    ],
)
def test_range_errors_name_the_token(text: str, syntax: str, token: str) -> None:
    with pytest.raises(RangeSyntaxError) as info:
        parse_range(text, syntax)  # type: ignore[arg-type]
    assert token in str(info.value)
    assert isinstance(info.value, ValueError)


def test_strict_blang_rejects_what_blang_rejects() -> None:
    with pytest.raises(RangeSyntaxError, match=r"<v2\.4\.0"):
        parse_range("<v2.4.0", "blang", strict=True)
    with pytest.raises(RangeSyntaxError, match=r">=1\.0"):
        parse_range(">=1.0 <2.0.0", "blang", strict=True)


# ------------------------------------------------------------------ properties

prerelease = st.one_of(
    st.none(),
    st.lists(
        st.one_of(st.integers(0, 20).map(str), st.sampled_from(["alpha", "beta", "rc", "x-1"])),
        min_size=1,
        max_size=3,
    ).map(".".join),
)
versions = st.builds(
    Version,
    st.integers(0, 6),
    st.integers(0, 6),
    st.integers(0, 6),
    prerelease,
    st.one_of(st.none(), st.sampled_from(["b1", "build.7"])),
)
releases = st.builds(Version, st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))


@given(versions)
def test_version_text_round_trips(v: Version) -> None:
    assert parse_version(str(v)) == v
    assert str(parse_version(str(v))) == str(v)
    assert str(parse_version("v" + str(v))) == str(v)


@given(versions, versions, versions)
def test_blang_interval_is_plain_ordering(low: Version, high: Version, v: Version) -> None:
    rng = parse_range(f">={low} < {high}", "blang")
    assert rng.contains(v) == (low.compare(v) <= 0 and v.compare(high) < 0)


@given(versions, versions, versions)
def test_or_is_union_and_space_is_intersection(a: Version, b: Version, v: Version) -> None:
    for syntax in ("blang", "masterminds"):
        ra, rb = parse_range(f">={a}", syntax), parse_range(f"<{b}", syntax)  # type: ignore[arg-type]
        union = parse_range(f">={a} || <{b}", syntax)  # type: ignore[arg-type]
        inter = parse_range(f">={a} <{b}", syntax)  # type: ignore[arg-type]
        assert union.contains(v) == (ra.contains(v) or rb.contains(v))
        assert inter.contains(v) == (ra.contains(v) and rb.contains(v))


@given(releases, versions)
def test_masterminds_caret_matches_its_definition(con: Version, v: Version) -> None:
    rng = parse_range(f"^{con}", "masterminds")
    if v.prerelease:
        expected = False
    elif con.major > 0:
        expected = v.compare(con) >= 0 and v.major == con.major
    elif con.minor > 0:
        expected = v.compare(con) >= 0 and v.major == 0 and v.minor == con.minor
    else:
        expected = (v.major, v.minor, v.patch) == (0, 0, con.patch)
    assert rng.contains(v) == expected


@given(releases, versions)
def test_masterminds_tilde_matches_its_definition(con: Version, v: Version) -> None:
    rng = parse_range(f"~{con}", "masterminds")
    expected = (
        not v.prerelease and v.compare(con) >= 0 and (v.major, v.minor) == (con.major, con.minor)
    ) or (con == Version(0) and not v.prerelease)
    assert rng.contains(v) == expected


@given(st.integers(0, 6), st.integers(0, 6), versions)
def test_wildcards_agree_between_dialects_on_releases(major: int, minor: int, v: Version) -> None:
    blang = parse_range(f"{major}.{minor}.x", "blang")
    mm = parse_range(f"{major}.{minor}.x", "masterminds")
    in_span = (v.major, v.minor) == (major, minor)
    assert mm.contains(v) == (in_span and not v.prerelease)
    if not v.prerelease:
        assert blang.contains(v) == in_span


@given(versions)
def test_equality_range_contains_exactly_its_version(v: Version) -> None:
    rng = parse_range(str(v), "blang")
    assert rng.contains(v)
    assert not rng.contains(v.bump_patch())
