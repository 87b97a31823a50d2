"""``gojson.dumps`` writes Go's text whether orjson's one-call path or the copying path is taken."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from resolver.catalog import gojson

CASES: list[tuple[Any, str]] = [
    ({"b": 1, "a": [True, None, False, -1]}, '{"a":[true,null,false,-1],"b":1}'),
    ({"v": 1.0, "w": "1.0"}, '{"v":1,"w":"1.0"}'),
    ([-0.0, 0.0, 1.5, 1e21, 1e-7], "[-0,0,1.5,1e+21,1e-7]"),
    ([2**53 - 1, 2**53, 2**60], "[9007199254740991,9007199254740992,1152921504606847000]"),
    ({"s": "x\bq\f\u2028"}, '{"s":"x\\u0008q\\u000c\\u2028"}'),
    ({'k"1': -5, "e": "1e5", "n": "-3.5"}, '{"e":"1e5","k\\"1":-5,"n":"-3.5"}'),
    ({"<&>": "<b>"}, '{"<&>":"<b>"}'),
    ({"x": "\\\\b"}, '{"x":"\\\\\\\\b"}'),
]


@pytest.mark.parametrize(("value", "text"), CASES)
def test_dumps_writes_go_text(value: Any, text: str) -> None:
    assert gojson.dumps(value) == text


def test_floats_and_big_integers_leave_the_fast_path() -> None:
    option = orjson.OPT_SORT_KEYS
    assert gojson._fast({"a": [1, "2.5"]}, option) == '{"a":[1,"2.5"]}'
    assert gojson._fast({"a": [1, 2.5]}, option) is None
    assert gojson._fast([2**53], option) is None
    assert gojson._fast(["x" * 100], option) is None  # sparse text: the copy is cheaper


def test_escape_html_and_struct_order() -> None:
    assert gojson.dumps({"b": "<&>", "a": 2.0}, escape_html=True, sort_keys=False) == (
        '{"b":"\\u003c\\u0026\\u003e","a":2}'
    )
