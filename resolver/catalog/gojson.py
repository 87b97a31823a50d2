"""JSON text exactly as Go's ``encoding/json`` writes a decoded ``map[string]any``.

catalogd serves every catalog object re-encoded from a Go map (keys sorted, HTML escaping off,
numbers decoded to float64), and opm hands property values to gRPC clients the same way. To answer
byte for byte like them, the catalogd body (:mod:`resolver.catalog.jsonl`) and pivoter's gRPC
message builder (``pivoter.catalogserver.registry``) encode through :func:`dumps`.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import orjson

# Go escapes these control characters as \u00XX where Python writes a short escape.
_SHORT_ESCAPES = re.compile(r"(\\\\)|\\([bf])")
_GO_ESCAPE = {"b": "\\u0008", "f": "\\u000c"}


def _fix_escapes(text: str) -> str:
    if "\\b" in text or "\\f" in text:
        text = _SHORT_ESCAPES.sub(lambda m: m.group(1) or _GO_ESCAPE[m.group(2)], text)
    # Go also escapes the JavaScript line terminators U+2028 and U+2029.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def go_number(value: float) -> str:
    """Format a number as Go's encoding/json formats a float64."""
    f = float(value)
    if math.isinf(f) or math.isnan(f):
        raise ValueError(f"unsupported number {value!r}")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    magnitude = abs(f)
    text = repr(f)
    if 1e-6 <= magnitude < 1e21:
        # Positional notation with the shortest digits that round-trip (what Go's 'f', -1 does).
        text = format(Decimal(text), "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mantissa, _, exponent = text.partition("e")
    if not exponent:  # repr chose positional, Go wants an exponent
        mantissa, _, exponent = f"{f:e}".partition("e")
        mantissa = repr(float(mantissa))
    mantissa = mantissa.removesuffix(".0")
    sign = "-" if exponent.startswith("-") else "+"
    digits = exponent.lstrip("+-").lstrip("0") or "0"
    return f"{mantissa}e{sign}{digits}"


_MAX_EXACT = 2**53


def _normalize(value: Any, slow: list[str]) -> Any:
    """Copy ``value`` with str keys and numbers orjson would write differently from Go replaced
    by placeholders (collected in ``slow``) that :func:`dumps` swaps for Go's text."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if -_MAX_EXACT <= value <= _MAX_EXACT:
            return value
        return _placeholder(go_number(value), slow)
    if isinstance(value, float):
        if value == 0 and math.copysign(1.0, value) < 0:
            return _placeholder("-0", slow)  # Go writes negative zero as -0; int() would drop it
        if value.is_integer() and abs(value) <= _MAX_EXACT:
            return int(value)
        text = go_number(value)
        if text == repr(value):
            return value
        return _placeholder(text, slow)
    if isinstance(value, dict):
        return {str(k): _normalize(v, slow) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v, slow) for v in value]
    return str(value)


def _placeholder(text: str, slow: list[str]) -> str:
    slow.append(text)
    return f"\x00{len(slow) - 1}\x00"


# A prefix of orjson's text made only of strings, integers, literals and punctuation. When it is
# not the whole text, a number with a fraction or an exponent (a float: Go may write it
# differently) is where it stops. Possessive quantifiers: one pass, no backtracking.
_NO_FLOATS = re.compile(r'(?:[^"0-9-]++|"(?:[^"\\]++|\\.)*+"|-?[0-9]++(?![0-9.eE]))*+')

# Every type orjson would write by itself but Go (or :func:`_normalize`) would not goes to
# ``default``, which refuses it: such values take the slow path.
_FAST_OPTIONS = (
    orjson.OPT_STRICT_INTEGER  # integers beyond 2**53 - 1: Go writes them as float64
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)

# Scanning costs about as much per character as copying costs per 30 characters of a value made
# of small strings (measured on the shared catalogs); above this many characters per quote the
# copy in :func:`_normalize` is cheaper.
_SPARSE = 32


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def _fast(value: Any, option: int) -> str | None:
    """orjson's text when it is already Go's (no floats, big integers or odd types), else None.

    Catalog values hold no NaN or infinity (the loader refuses them), which orjson would write
    as null.
    """
    try:
        text = orjson.dumps(value, default=_refuse, option=option | _FAST_OPTIONS).decode()
    except orjson.JSONEncodeError:
        return None
    if len(text) > _SPARSE * text.count('"'):
        return None  # few, long strings (base64 data): the copy is cheaper than the scan
    match = _NO_FLOATS.match(text)
    return text if match is not None and match.end() == len(text) else None


def dumps(value: Any, *, escape_html: bool = False, sort_keys: bool = True) -> str:
    """Return ``value`` as compact JSON text identical to Go's encoding of a decoded map.

    ``escape_html`` writes ``<``, ``>`` and ``&`` as ``\\u003c``... as ``json.Marshal`` does by
    default (catalogd turns that off; opm's inline objects and synthesized CSVs keep it).
    ``sort_keys=False`` keeps the dicts' own order (for values standing in for Go structs).
    Most values (no floats) are written by orjson in one call; the others are copied with their
    numbers replaced by Go's text first.
    """
    option = orjson.OPT_SORT_KEYS if sort_keys else 0
    text = _fast(value, option)
    if text is None:
        slow: list[str] = []
        text = orjson.dumps(_normalize(value, slow), option=option).decode()
        for i, number in enumerate(slow):
            text = text.replace(f'"\\u0000{i}\\u0000"', number, 1)
    text = _fix_escapes(text)
    if escape_html:
        text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text
