"""resolver.safedata: the one loader for untrusted YAML and JSON (limits, plain JSON data only)."""

from __future__ import annotations

import math
import time
from typing import Any

import orjson
import pytest

from resolver import safedata
from resolver.safedata import Limits, SafeDataError

DEEP = 100_000

FLOW_SEQ = "[" * DEEP + "]" * DEEP
FLOW_MAP = "{a: " * DEEP + "1" + "}" * DEEP
BLOCK_SEQ = "".join("  " * i + "-\n" for i in range(3000))
STACKED_SEQ = "- " * DEEP + "x\n"
BLOCK_MAP = "".join(" " * i + "a:\n" for i in range(3000))
MIXED = "".join(" " * i + "a:\n" for i in range(150)) + " " * 150 + "[" * 100 + "]" * 100
LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10)
)


def _plain(value: Any) -> bool:
    """Is ``value`` a tree of plain JSON data that orjson writes back unchanged?"""
    stack = [value]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if isinstance(current, dict | list):
            if id(current) in seen:
                return False  # shared or cyclic
            seen.add(id(current))
        if isinstance(current, dict):
            if not all(type(k) is str for k in current):
                return False
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
        elif current is not None and type(current) not in (str, int, float, bool):
            return False
    return bool(orjson.loads(orjson.dumps(value)) == value)


@pytest.mark.parametrize(
    "text",
    [FLOW_SEQ, FLOW_MAP, BLOCK_SEQ, STACKED_SEQ, BLOCK_MAP, MIXED],
    ids=["flow-seq", "flow-map", "block-seq", "stacked-dashes", "block-map", "mixed"],
)
def test_deep_yaml_is_refused_quickly(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(SafeDataError, match="nested deeper than 200 levels") as caught:
        safedata.load_yaml(text)
    assert time.monotonic() - started < 5
    assert caught.value.line > 0
    assert caught.value.limit
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_deep_json_is_refused(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    for depth in (201, 1000, 1025, DEEP):
        text = opener * depth + "1" + closer * depth
        with pytest.raises(SafeDataError, match="nested"):
            safedata.load_json(text)
        with pytest.raises(SafeDataError, match="nested"):
            safedata.load_json(text.encode())


def test_depth_limit_is_exact_in_yaml_and_json() -> None:
    for depth in (1, 199, 200):
        assert safedata.load_json("[" * depth + "]" * depth) is not None
        assert safedata.load_yaml("[" * depth + "]" * depth) is not None
    with pytest.raises(SafeDataError):
        safedata.load_json("[" * 201 + "]" * 201)
    with pytest.raises(SafeDataError):
        safedata.load_yaml("[" * 201 + "]" * 201)
    small = Limits(max_depth=3)
    assert safedata.load_yaml("a: {b: [1]}", limits=small) == {"a": {"b": [1]}}
    with pytest.raises(SafeDataError):
        safedata.load_yaml("a: {b: [[1]]}", limits=small)
    with pytest.raises(SafeDataError):
        safedata.load_json('{"a": {"b": [[1]]}}', limits=small)


def test_an_alias_cannot_carry_nesting_past_the_limit() -> None:
    inner = "[" * 150 + "]" * 150
    text = f"a: &x {inner}\nb: " + "[" * 60 + "*x" + "]" * 60 + "\n"
    with pytest.raises(SafeDataError, match="nested deeper"):
        safedata.load_yaml(text)


def test_billion_laughs_is_refused_in_bounded_time() -> None:
    started = time.monotonic()
    with pytest.raises(SafeDataError, match="alias bomb"):
        safedata.load_yaml(LAUGHS)
    assert time.monotonic() - started < 10
    with pytest.raises(SafeDataError, match="alias bomb"):
        safedata.load_yaml(LAUGHS, limits=Limits(max_nodes=10_000))


def test_an_alias_counts_what_its_anchor_holds_not_what_was_written() -> None:
    """An anchored collection is measured as it is built; a repeated key or a merge makes what
    it holds differ from what was written, and the alias counts what it holds."""
    # 16 nodes written, then the alias: {k: 1} is 3 nodes (the 11 of the first k's list are gone).
    repeated = "a: &x {k: [1, 2, 3, 4, 5, 6, 7, 8], k: 1}\nb: *x\n"
    assert safedata.load_yaml(repeated, limits=Limits(max_nodes=19))["b"] == {"k": 1}
    with pytest.raises(SafeDataError, match="alias bomb"):
        safedata.load_yaml(repeated, limits=Limits(max_nodes=18))
    # 14 nodes written, then the alias: {k: 2} is 3 nodes (as written, *y would count 7).
    merged = "a: &x {k: 1}\nb: &y {<<: *x, k: 2}\nc: *y\n"
    assert safedata.load_yaml(merged, limits=Limits(max_nodes=17))["c"] == {"k": 2}
    with pytest.raises(SafeDataError, match="alias bomb"):
        safedata.load_yaml(merged, limits=Limits(max_nodes=16))


def test_a_redefined_anchor_is_measured_anew() -> None:
    """Sizes and heights are kept per anchor (an alias bomb repeats each alias); an anchor
    defined again counts with its new value."""
    small = "a: &x [1]\nb: *x\n"
    big = "c: &x [" + ", ".join(["1"] * 50) + "]\nd: [*x, *x]\n"
    doc = safedata.load_yaml(small + big, limits=Limits(max_nodes=200))
    assert doc["b"] == [1]
    assert doc["d"] == [[1] * 50] * 2
    with pytest.raises(SafeDataError, match="alias bomb"):
        safedata.load_yaml(small + big + "e: [*x, *x]\n", limits=Limits(max_nodes=200))
    deep = "a: &x [1]\nb: *x\nc: &x " + "[" * 10 + "]" * 10 + "\nd: " + "[" * 5 + "*x" + "]" * 5
    with pytest.raises(SafeDataError, match="nested deeper"):
        safedata.load_yaml(deep, limits=Limits(max_depth=14))
    assert safedata.load_yaml(deep, limits=Limits(max_depth=17))["b"] == [1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("&a [*a]", "recursive alias"),
        ("a: &a {b: *a}", "recursive alias"),
        ("a: *nothing", "refers to no anchor"),
    ],
)
def test_recursive_and_undefined_aliases_are_refused(text: str, message: str) -> None:
    with pytest.raises(SafeDataError, match=message):
        safedata.load_yaml(text)


def test_aliases_are_copied_so_the_result_is_a_tree() -> None:
    doc = safedata.load_yaml("a: &x {k: [1, 2]}\nb: *x\nc: [*x, *x]\n")
    assert doc == {"a": {"k": [1, 2]}, "b": {"k": [1, 2]}, "c": [{"k": [1, 2]}] * 2}
    assert _plain(doc)
    doc["b"]["k"].append(3)
    assert doc["a"]["k"] == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        "a: !!binary aGVsbG8=",
        "a: !!set {x, y}",
        "a: !!omap [{x: 1}]",
        "a: !!pairs [{x: 1}]",
        "a: !!timestamp 2001-12-14",
        "a: !!python/object/apply:os.system [echo hi]",
        "a: !!python/name:os.system",
        "a: !custom value",
        "!!set {x}",
        "a: !<tag:example.com,2000:thing> x",
    ],
)
def test_tags_that_are_not_json_data_are_refused(text: str) -> None:
    with pytest.raises(SafeDataError, match="is not JSON data") as caught:
        safedata.load_yaml(text)
    assert caught.value.line == 1


def test_json_tags_and_implicit_types() -> None:
    doc = safedata.load_yaml(
        "s: !!str 123\ni: !!int '7'\nf: !!float '1.5'\nb: !!bool 'true'\nn: !!null ''\n"
        "m: !!map {k: v}\nq: !!seq [1]\nt: 2001-12-14\ne: =\nh: 0x1F\no: 017\ng: 1:30\n"
        "u: 1_000\nx: 1.5e+3\nv: ~\n"
    )
    assert doc == {
        "s": "123",
        "i": 7,
        "f": 1.5,
        "b": True,
        "n": None,
        "m": {"k": "v"},
        "q": [1],
        "t": "2001-12-14",  # timestamps stay strings, as in Kubernetes
        "e": "=",
        "h": 31,
        "o": 15,
        "g": 90,
        "u": 1000,
        "x": 1500.0,
        "v": None,
    }
    assert _plain(doc)


def test_go_yaml_booleans() -> None:
    assert safedata.load_yaml("[y, n, yes, off]") == ["y", "n", True, False]
    assert safedata.load_yaml("[y, N, yes, off]", go_yaml=True) == [True, False, True, False]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: .nan", "no NaN"),
        ("a: -.inf", "no NaN or infinity"),
        ("a: .Inf", "no NaN or infinity"),
        ("a: 1.0e+400", "out of range"),
        ("a: " + "1" * 10_000, "out of range"),
        ("a: -" + "9" * 5000, "out of range"),
        ("a: 0x" + "f" * 400, "out of range"),
        ("a: !!int '" + "1" * 10_000 + "'", "out of range"),
        ("a: !!int nope", "is not a valid !!int"),
        ("a: !!float nope", "is not a valid !!float"),
        ("a: !!bool maybe", "not a boolean"),
    ],
)
def test_numbers_json_cannot_hold_are_refused(text: str, message: str) -> None:
    with pytest.raises(SafeDataError, match=message):
        safedata.load_yaml(text)


def test_integers_past_64_bits_become_floats_as_in_go_and_orjson() -> None:
    assert safedata.load_yaml("a: 18446744073709551615") == {"a": 18446744073709551615}
    assert safedata.load_yaml("a: 18446744073709551616") == {"a": 1.8446744073709552e19}
    assert safedata.load_json('{"a": 18446744073709551616}') == {"a": 1.8446744073709552e19}
    assert _plain(safedata.load_yaml("a: -99999999999999999999999"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("~: 1", "key is null"),
        ("1.5: a", "key is the number 1.5"),
        ("? [a]\n: b", "key is a collection"),
        ("? {a: 1}\n: b", "key is a collection"),
    ],
)
def test_keys_json_cannot_hold_are_refused(text: str, message: str) -> None:
    with pytest.raises(SafeDataError, match=message):
        safedata.load_yaml(text)


def test_integer_and_boolean_keys_become_strings_as_in_sigs_k8s_yaml() -> None:
    assert safedata.load_yaml("1: a\ntrue: b\non: c\n") == {"1": "a", "true": "c"}


def test_merge_keys() -> None:
    doc = safedata.load_yaml(
        "base: &b {x: 1, y: 2}\nmore: &m {y: 5, z: 3}\n"
        "one:\n  <<: *b\n  y: 9\nlist:\n  <<: [*m, *b]\nquoted: {'<<': 1}\n"
    )
    assert doc["one"] == {"x": 1, "y": 9}
    assert doc["list"] == {"x": 1, "y": 5, "z": 3}  # earlier merges win
    assert doc["quoted"] == {"<<": 1}
    with pytest.raises(SafeDataError, match="merge key"):
        safedata.load_yaml("a:\n  <<: [1, 2]\n")


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(SafeDataError, match="surrogate"):
        safedata.load_json('{"a": "\\ud800"}')
    with pytest.raises(SafeDataError, match="Unicode"):
        safedata.load_yaml('a: "\\ud800"')
    with pytest.raises(SafeDataError):
        safedata.load_yaml('a: "\\udfff x"')
    assert safedata.load_json('"\\ud83d\\ude00"') == "\U0001f600"


def test_json_is_strict() -> None:
    for text in ("NaN", "[Infinity]", "[-Infinity]", "{'a': 1}", "[1,]", "1e400", ""):
        with pytest.raises(SafeDataError, match="invalid JSON"):
            safedata.load_json(text)
    with pytest.raises(SafeDataError, match="invalid JSON"):
        safedata.load_json(b"\xff\xfe")


def test_errors_are_one_line_with_the_line_number() -> None:
    with pytest.raises(SafeDataError) as caught:
        safedata.load_yaml("a: 1\nb: 2\nc: !!binary aGk=\n", where="x.yaml")
    assert (
        str(caught.value) == "x.yaml: line 3: the YAML tag !!binary is not JSON data; refusing it"
    )
    with pytest.raises(SafeDataError) as caught:
        safedata.load_yaml("a: 1\nb: [\n")
    assert caught.value.line == 3
    assert str(caught.value).startswith("line 3: invalid YAML:")
    with pytest.raises(SafeDataError) as caught:
        safedata.load_json('{\n"a":\n}')
    assert caught.value.line == 3


def test_documents_lines_and_limits() -> None:
    text = "a: 1\n---\n\n# c\nb: 2\n---\n"
    assert list(safedata.iter_yaml_documents(text)) == [({"a": 1}, 1), ({"b": 2}, 5), (None, 7)]
    assert safedata.load_yaml_all(text) == [{"a": 1}, {"b": 2}, None]
    with pytest.raises(SafeDataError, match="more than 2 documents"):
        safedata.load_yaml_all("a\n---\nb\n---\nc\n", limits=Limits(max_documents=2))
    with pytest.raises(SafeDataError, match="expected one YAML document"):
        safedata.load_yaml("a\n---\nb\n")
    with pytest.raises(SafeDataError, match="exceeds the limit of 10"):
        safedata.load_yaml("a: " + "x" * 20, limits=Limits(max_bytes=10))
    with pytest.raises(SafeDataError, match="exceeds the limit of 10"):
        safedata.load_json(b'"' + b"x" * 20 + b'"', limits=Limits(max_bytes=10))
    assert safedata.load_yaml("") is None
    assert safedata.load_yaml_all("") == []


def test_json_stream() -> None:
    text = '{"a": 1}\n\n{"b":\n 2} {"c": 3}\n'
    values = [(v, line) for v, line, _ in safedata.iter_json_stream(text)]
    assert values == [({"a": 1}, 1), ({"b": 2}, 3), ({"c": 3}, 4)]
    with pytest.raises(SafeDataError, match=r"invalid JSON") as caught:
        list(safedata.iter_json_stream('{"a": 1}\n{"b": NaN}\n'))
    assert caught.value.line == 2
    for bad in ('{"a": ' + "1" * 10_000 + "}", "[" * DEEP, '{"a": "\\ud800"}'):
        with pytest.raises(SafeDataError):
            list(safedata.iter_json_stream(bad))


def test_json_or_yaml() -> None:
    assert safedata.load_json_or_yaml(b'{"a": 1}') == {"a": 1}
    assert safedata.load_json_or_yaml(b"a: [1, y]", go_yaml=True) == {"a": [1, True]}
    with pytest.raises(SafeDataError, match="nested") as caught:
        safedata.load_json_or_yaml(FLOW_SEQ.encode())
    assert caught.value.limit
    with pytest.raises(SafeDataError, match="!!binary") as caught:
        safedata.load_json_or_yaml(b"a: !!binary aGk=")
    assert not caught.value.limit


def test_bytes_and_text_agree_and_bad_bytes_are_refused() -> None:
    assert safedata.load_yaml(b"a: [1, x]") == safedata.load_yaml("a: [1, x]")
    with pytest.raises(SafeDataError):
        safedata.load_yaml(b"a: \xff\xfe\n")
    with pytest.raises(SafeDataError):
        safedata.load_yaml("a: \x00\n")


def test_json_integer_negative_zero_keeps_its_sign_as_go_does() -> None:
    value = safedata.load_json('{"a": -0, "b": [-0, 0, "-0", 7], "c": "v1.0-0"}')
    assert math.copysign(1.0, value["a"]) == -1.0
    assert math.copysign(1.0, value["b"][0]) == -1.0
    assert value["b"][1:] == [0, "-0", 7]
    assert isinstance(value["b"][3], int)
    assert value["c"] == "v1.0-0"
    assert math.copysign(1.0, safedata.load_json(b" -0 ")) == -1.0
