"""Untrusted JSON: orjson (strict RFC 8259, stops at 1024 levels) plus a depth check at C speed.

Part of :mod:`resolver.safedata`; import from there.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import orjson

from resolver.safedata.limits import DEFAULT_LIMITS, Limits, SafeDataError, check_size

__all__ = ["iter_json_stream", "load_json"]


def load_json(data: str | bytes, *, limits: Limits = DEFAULT_LIMITS, where: str = "") -> Any:
    """Parse one JSON value (orjson: RFC 8259 strictly, no NaN, no lone surrogates)."""
    check_size(data, limits, where)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        reason = _json_reason(err)
        deep = reason == "nested too deeply"
        raise SafeDataError(f"invalid JSON: {reason}", err.lineno, where, limit=deep) from None
    _check_json_depth(value, limits, where)
    if _has_negative_zero(data):
        value = _with_negative_zero(data)
    return value


# A bare integer -0 (as a value: after "[", ":" or "," or at the start, before ",", "]", "}" or the
# end). orjson reads it as 0; Go's encoding/json keeps a json.RawMessage verbatim and opm sends
# "-0" on, so the sign is kept as the float -0.0, which the Go-style writer prints as "-0".
_NEGATIVE_ZERO = re.compile(r"(?:^|[\[:,])\s*-0\s*(?:[,\]}]|$)")
_NEGATIVE_ZERO_BYTES = re.compile(_NEGATIVE_ZERO.pattern.encode())


def _has_negative_zero(data: str | bytes) -> bool:
    if isinstance(data, str):
        return "-0" in data and _NEGATIVE_ZERO.search(data) is not None
    return b"-0" in data and _NEGATIVE_ZERO_BYTES.search(data) is not None


def _with_negative_zero(data: str | bytes) -> Any:
    """Parse again, keeping -0 (runs only after orjson accepted ``data`` and its depth passed)."""
    return json.loads(data, parse_int=lambda text: -0.0 if text == "-0" else orjson.loads(text))


def iter_json_stream(
    text: str, start: int = 0, *, limits: Limits = DEFAULT_LIMITS, where: str = ""
) -> Iterator[tuple[Any, int, int]]:
    """Yield ``(value, line, end)`` for each JSON value of concatenated JSON text from ``start``.

    ``line`` is where the value starts (1-based, counted from the start of ``text``), ``end`` the
    offset after it. Raises SafeDataError (with its line) at the first value that is refused.
    """
    check_size(text, limits, where)
    decoder = json.JSONDecoder()
    line = text.count("\n", 0, start) + 1
    pos = start
    length = len(text)
    while True:
        begin = _skip_space(text, pos)
        if begin >= length:
            return
        line += text.count("\n", pos, begin)
        try:
            # The stdlib decoder only finds where the value ends (it recurses with Python's
            # recursion limit, so it raises instead of crashing); orjson builds the value.
            _, end = decoder.raw_decode(text, begin)
        except json.JSONDecodeError as err:
            reason = f"invalid JSON: {err.msg} (column {err.colno})"
            raise SafeDataError(reason, err.lineno, where) from None
        except RecursionError:
            reason = "invalid JSON: nested too deeply"
            raise SafeDataError(reason, line, where, limit=True) from None
        except ValueError:
            raise SafeDataError(
                "invalid JSON: a number is out of range for a JSON number (float64)", line, where
            ) from None
        try:
            value = load_json(text[begin:end], limits=limits)
        except SafeDataError as err:
            at = line + err.line - 1 if err.line else line
            raise SafeDataError(err.reason, at, where, limit=err.limit) from None
        yield value, line, end
        line += text.count("\n", begin, end)
        pos = end


_SPACE = re.compile(r"\s*")


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


def _json_reason(err: orjson.JSONDecodeError) -> str:
    msg = str(err.msg)
    if "depth limit" in msg or "recursion" in msg:
        return "nested too deeply"
    if "infinity" in msg:
        return "a number is out of range for a JSON number (float64)"
    return f"{msg} (column {err.colno})"


def _check_json_depth(value: Any, limits: Limits, where: str) -> None:
    if not isinstance(value, dict | list):
        return
    # orjson refuses to write more than _ORJSON_DEPTH levels (and never recurses past that), so
    # writing the value wrapped in (_ORJSON_DEPTH - max_depth) lists fails exactly when it is
    # deeper than max_depth: a check at C speed, cheaper than counting brackets in the text.
    wrappers = _ORJSON_DEPTH - limits.max_depth
    if 1 <= wrappers <= 64:
        chains: dict[int, tuple[list[Any], list[Any]]] | None = getattr(_chains, "by_count", None)
        if chains is None:
            chains = _chains.by_count = {}
        if wrappers not in chains:
            chains[wrappers] = _chain(wrappers)
        outer, inner = chains[wrappers]
        inner[0] = value
        try:
            orjson.dumps(outer)
        except orjson.JSONEncodeError:
            pass
        else:
            return
        finally:
            inner[0] = None
    if _deeper_than(value, limits.max_depth):
        reason = f"JSON nested deeper than {limits.max_depth} levels; refusing it"
        raise SafeDataError(reason, 0, where, limit=True)


_chains = threading.local()
"""Per thread: wrapper count -> (outermost list, innermost list) of a chain of nested lists."""


def _chain(wrappers: int) -> tuple[list[Any], list[Any]]:
    inner: list[Any] = [None]
    outer = inner
    for _ in range(wrappers - 1):
        outer = [outer]
    return outer, inner


def _orjson_depth() -> int:
    """The deepest nesting orjson writes (254 in orjson 3.x), probed once."""
    low, high = 0, 2048
    while low < high:
        middle = (low + high + 1) // 2
        value: Any = 0
        for _ in range(middle):
            value = [value]
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            high = middle - 1
        else:
            low = middle
    return low


_ORJSON_DEPTH = _orjson_depth()


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Is the collection ``value`` nested deeper than ``max_depth``? (No recursion.)"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > max_depth:
            return True
        children = current.values() if type(current) is dict else current
        for child in children:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return False
