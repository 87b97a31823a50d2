"""Untrusted YAML: plain JSON data built from libyaml's events, with no recursion anywhere.

libyaml's parser is a state machine with explicit stacks; its composer (what ``yaml.load`` uses)
recurses on the C stack and crashes on deep input, so it is never called: one loop here consumes
the events, checking depth, alias expansion (nodes and bytes), tags, numbers and keys as they
arrive. Part of :mod:`resolver.safedata`; import from there.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

from resolver.safedata.budget import ALIAS_NODE_COST, BudgetExceeded, MemoryBudget, current_budget
from resolver.safedata.limits import (
    DEFAULT_LIMITS,
    Limits,
    Located,
    Refused,
    SafeDataError,
    TooBig,
    TooDeep,
    check_size,
)

_CParser: Any
try:
    _CParser = importlib.import_module("yaml.cyaml").CParser
except (ImportError, AttributeError):  # PyYAML built without libyaml
    _CParser = None

__all__ = ["iter_yaml_documents", "load_yaml", "load_yaml_all"]


_Y = "tag:yaml.org,2002:"
_STR = _Y + "str"
_MAP = _Y + "map"
_SEQ = _Y + "seq"
_NULL = _Y + "null"
_BOOL = _Y + "bool"
_INT = _Y + "int"
_FLOAT = _Y + "float"
_MERGE = _Y + "merge"
_SCALAR_TAGS = frozenset((_STR, _NULL, _BOOL, _INT, _FLOAT))

_ScalarEvent = yaml.ScalarEvent
_AliasEvent = yaml.AliasEvent
_MappingStartEvent = yaml.MappingStartEvent
_MappingEndEvent = yaml.MappingEndEvent
_SequenceStartEvent = yaml.SequenceStartEvent
_SequenceEndEvent = yaml.SequenceEndEvent
_DocumentStartEvent = yaml.DocumentStartEvent
_DocumentEndEvent = yaml.DocumentEndEvent
_StreamEndEvent = yaml.StreamEndEvent
_SURROGATE = re.compile("[\ud800-\udfff]")

_Resolvers = dict[str, list[tuple[str, re.Pattern[str]]]]


def _implicit_resolvers(go_bools: bool) -> _Resolvers:
    base: _Resolvers = yaml.SafeLoader.yaml_implicit_resolvers
    out: _Resolvers = {}
    for first, resolvers in base.items():
        kept = [(t, r) for t, r in resolvers if t in (_NULL, _BOOL, _INT, _FLOAT, _MERGE)]
        if kept:
            out[first] = kept
    if go_bools:
        pattern = re.compile("^(?:" + "|".join(_GO_BOOLS) + ")$")
        for first in {k[0] for k in _GO_BOOLS}:
            rest = [r for r in out.get(first, []) if r[0] != _BOOL]
            out[first] = [(_BOOL, pattern), *rest]
    return out


# YAML 1.1 booleans as go-yaml v2 (under sigs.k8s.io/yaml) reads them: PyYAML lacks y/Y/n/N.
_GO_BOOLS = {
    **dict.fromkeys(
        ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True
    ),
    **dict.fromkeys(
        ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False
    ),
}
_PY_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}
_RESOLVERS = {False: _implicit_resolvers(False), True: _implicit_resolvers(True)}

_INT64_MIN = -(2**63)
_UINT64_MAX = 2**64 - 1
_MAX_NUMBER_CHARS = 1000
"""Longer numerals are refused before conversion: past 309 decimal digits no number fits a
float64, and Python's ``int()`` raises ValueError past 4300 digits."""


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_Y) :] if tag.startswith(_Y) else tag


def _resolve(value: str, plain: bool, resolvers: _Resolvers) -> str:
    if plain:
        for tag, regexp in resolvers.get(value[:1], ()):
            if regexp.match(value):
                return tag
    return _STR


def _construct_int(text: str) -> int | float:
    digits = text.replace("_", "")
    sign = 1
    if digits[:1] == "-":
        sign = -1
    if digits[:1] in "+-":
        digits = digits[1:]
    if len(digits) > _MAX_NUMBER_CHARS:
        raise Refused(f"the integer of {len(digits)} digits is out of range for JSON")
    if digits == "0":
        return 0
    if digits.startswith("0b"):
        number = int(digits[2:], 2)
    elif digits.startswith("0x"):
        number = int(digits[2:], 16)
    elif digits.startswith("0o"):
        number = int(digits[2:], 8)
    elif digits.startswith("0"):
        number = int(digits, 8)
    elif ":" in digits:
        number = 0
        for part in digits.split(":"):
            number = number * 60 + int(part)
    else:
        number = int(digits)
    number *= sign
    if _INT64_MIN <= number <= _UINT64_MAX:
        return number
    # Go (and orjson for JSON) read integers past 64 bits as float64.
    try:
        as_float = float(number)
    except OverflowError:
        raise Refused(f"the integer {text[:20]}... is out of range for JSON") from None
    return as_float


def _construct_float(text: str) -> float:
    digits = text.replace("_", "").lower()
    if len(digits) > _MAX_NUMBER_CHARS:
        raise Refused(f"the number of {len(digits)} characters is out of range for JSON")
    if digits.lstrip("+-") in (".inf", ".nan"):
        raise Refused(f"{text} is not a JSON number (JSON has no NaN or infinity)")
    if ":" in digits:
        sign = -1.0 if digits.startswith("-") else 1.0
        number = 0.0
        for part in digits.lstrip("+-").split(":"):
            number = number * 60 + float(part)
        result = sign * number
    else:
        result = float(digits)
    if not math.isfinite(result):
        raise Refused(f"the number {text[:40]} is out of range for a JSON number (float64)")
    return result


def _construct_scalar(tag: str, value: str, bools: dict[str, bool]) -> Any:
    if tag == _STR:
        return value
    if tag == _NULL:
        return None
    try:
        if tag == _INT:
            return _construct_int(value)
        if tag == _FLOAT:
            return _construct_float(value)
        if tag == _BOOL:
            found = bools.get(value)
            if found is None:
                found = _PY_BOOLS.get(value.lower())
            if found is None:
                raise Refused(f"{value[:40]!r} is not a boolean")
            return found
    except Refused:
        raise
    except ValueError:
        raise Refused(f"{value[:40]!r} is not a valid {_tag_name(tag)}") from None
    raise Refused(f"the YAML tag {_tag_name(tag)} is not JSON data; refusing it")


class _Merge:
    """The ``<<`` merge key (a sentinel; never in a result)."""


_MERGE_KEY = _Merge()


def _key(value: Any) -> str | _Merge:
    """A mapping key as ``sigs.k8s.io/yaml`` turns it into a JSON object key."""
    if type(value) is str or value is _MERGE_KEY:
        return value
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    shown = "null" if value is None else type(value).__name__
    if isinstance(value, float):
        shown = f"the number {value!r}"
    raise Refused(f"a mapping key is {shown}, not a string; JSON keys are strings (quote it)")


_NO_KEY: Any = object()


def _copy(value: Any) -> Any:
    """A deep copy of plain JSON data (its depth is within limits, so orjson can write it)."""
    if type(value) is dict or type(value) is list:
        return orjson.loads(orjson.dumps(value))
    return value


def _height(value: Any) -> int:
    """Nesting of plain JSON data (0 for a scalar), without recursion."""
    best = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if type(current) is dict:
            current = current.values()
        elif type(current) is not list:
            continue
        depth += 1
        best = max(best, depth)
        stack.extend((child, depth) for child in current)
    return best


def _slow_scalar(event: Any, resolvers: _Resolvers, bools: dict[str, bool]) -> Any:
    """A scalar with an explicit tag, or one that may be a number, boolean, null or merge key."""
    tag = event.tag
    value = event.value
    if tag is None or tag == "!":
        tag = _resolve(value, tag is None and event.implicit[0], resolvers)
        if tag == _MERGE:
            return _MERGE_KEY
    elif tag not in _SCALAR_TAGS:
        raise Refused(f"the YAML tag {_tag_name(tag)} is not JSON data; refusing it")
    constructed = _construct_scalar(tag, value, bools)
    # libyaml refuses surrogate escapes; PyYAML's pure-Python parser does not.
    if type(constructed) is str and event.style == '"' and _has_surrogate(constructed):
        raise Refused("a string holds a lone UTF-16 surrogate, which JSON text cannot")
    return constructed


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def _merged(own: dict[str, Any], merges: list[Any]) -> dict[str, Any]:
    """``own`` with the ``<<`` merges under it (own keys win; earlier merges win over later)."""
    sources: list[Any] = []
    for merge in merges:
        sources.extend(merge if type(merge) is list else [merge])
    if not all(type(source) is dict for source in sources):
        raise Refused("a merge key (<<) needs a mapping or a list of mappings")
    out: dict[str, Any] = {}
    for source in sources:
        for k, v in source.items():
            out.setdefault(k, v)
    out.update(own)
    return out


def _documents(
    parser: Any, limits: Limits, go_yaml: bool, length: int, budget: MemoryBudget | None
) -> Iterator[tuple[Any, int]]:
    """Build plain values from libyaml's events: one loop, explicit stacks, limits checked as the
    events arrive (so nothing ever recurses, however deep the input).

    ``length`` is the text's; ``budget``, when given, is charged for what each alias adds.
    """
    resolvers = _RESOLVERS[go_yaml]
    bools = _GO_BOOLS if go_yaml else {}
    max_depth = limits.max_depth
    max_nodes = limits.max_nodes
    # What the text may become (see Limits.max_expanded_bytes): JSON bytes of every node built so
    # far, all documents together; checked at each alias (only aliases make it outgrow the text)
    # and at each document's end.
    max_expanded = max(limits.max_expanded_bytes, 2 * length)
    expanded = 0
    alias_nodes = 0  # nodes aliases copied, all documents together
    get_event = parser.get_event
    # The collection being built: its value, whether it is a list, the key waiting for its value
    # (mappings), its anchor and its merge values; and its size and height so far, as _size and
    # _height count them (a repeated key makes them wrong: they are counted again at the end), and
    # ``expanded`` when it started (what it becomes is what was built since).
    # The parents wait on two stacks.
    stack: list[tuple[Any, bool, Any, str | None, list[Any] | None]] = []
    counts: list[tuple[int, int, bool, int]] = []
    cur: Any = None
    cur_list = False
    cur_key: Any = _NO_KEY
    cur_anchor: str | None = None
    cur_merges: list[Any] | None = None
    cur_size = cur_height = cur_start = 0
    cur_recount = False
    anchors: dict[str, Any] = {}
    # Each anchored value's size, height and bytes, counted as it was built: an alias bomb
    # repeats each alias many times, and walking the value at each would cost its size again.
    measured: dict[str, tuple[int, int, int]] = {}
    open_anchors: set[str] = set()
    nodes = 0
    documents = 0
    root: Any = None
    doc_line = 0
    event: Any = None
    try:
        while True:
            event = get_event()
            kind = type(event)
            if kind is _ScalarEvent:
                nodes += 1
                size, height = 1, 0
                value: Any = event.value
                expanded += len(value) + 2
                if (
                    event.tag is not None
                    or (event.implicit[0] and value[:1] in resolvers)
                    or (event.style == '"' and _has_surrogate(value))
                ):
                    value = _slow_scalar(event, resolvers, bools)
                if event.anchor is not None:
                    anchors[event.anchor] = value
                    measured[event.anchor] = (1, 0, len(event.value) + 2)
            elif kind is _MappingStartEvent or kind is _SequenceStartEvent:
                nodes += 1
                tag = event.tag
                is_list = kind is _SequenceStartEvent
                if tag is not None and tag not in ("!", _SEQ if is_list else _MAP):
                    raise Refused(f"the YAML tag {_tag_name(tag)} is not JSON data; refusing it")
                if len(stack) + (cur is not None) >= max_depth:
                    raise TooDeep(f"YAML nested deeper than {max_depth} levels; refusing it")
                if not doc_line:
                    doc_line = event.start_mark.line + 1
                if cur is not None:
                    stack.append((cur, cur_list, cur_key, cur_anchor, cur_merges))
                    counts.append((cur_size, cur_height, cur_recount, cur_start))
                cur = [] if is_list else {}
                cur_list = is_list
                cur_key = _NO_KEY
                cur_anchor = event.anchor
                cur_merges = None
                cur_size = cur_height = 1
                cur_recount = False
                cur_start = expanded
                expanded += 2
                if cur_anchor is not None:
                    open_anchors.add(cur_anchor)
                continue
            elif kind is _MappingEndEvent or kind is _SequenceEndEvent:
                value = cur
                size, height = cur_size, cur_height
                if cur_merges is not None:
                    value = _merged(value, cur_merges)
                if cur_recount or cur_merges is not None:  # keys that are there once count once
                    size, height = _size(value), _height(value)
                if cur_anchor is not None:
                    open_anchors.discard(cur_anchor)
                    anchors[cur_anchor] = value
                    # Bytes as built (keys a merge or a repeated key dropped still count).
                    measured[cur_anchor] = (size, height, expanded - cur_start)
                if stack:
                    cur, cur_list, cur_key, cur_anchor, cur_merges = stack.pop()
                    cur_size, cur_height, cur_recount, cur_start = counts.pop()
                else:
                    cur = None
            elif kind is _AliasEvent:
                name = event.anchor
                if name not in anchors:
                    if name in open_anchors:
                        raise Refused(
                            f"recursive alias *{name} (it refers to a collection holding it); "
                            "refusing a possible alias bomb"
                        )
                    raise Refused(f"the alias *{name} refers to no anchor")
                value = anchors[name]
                size, height, grown = measured[name]
                nodes += size
                alias_nodes += size
                expanded += grown
                if nodes > max_nodes or alias_nodes > max_nodes:
                    where = "document" if nodes > max_nodes else "text"
                    raise TooBig(
                        f"the {where} expands to more than {max_nodes:,} nodes (aliases "
                        "included); refusing a possible alias bomb"
                    )
                if expanded > max_expanded:
                    raise TooBig(
                        f"the YAML expands to more than {max_expanded:,} bytes (aliases "
                        "included); refusing a possible alias bomb"
                    )
                if budget is not None:
                    budget.charge(
                        grown + ALIAS_NODE_COST * size,
                        "YAML aliases expand the data (refusing a possible alias bomb)",
                    )
                if type(value) is dict or type(value) is list:
                    if len(stack) + (cur is not None) + height > max_depth:
                        raise TooDeep(f"YAML nested deeper than {max_depth} levels; refusing it")
                    value = _copy(value)
            elif kind is _DocumentStartEvent:
                documents += 1
                if documents > limits.max_documents:
                    raise Refused(f"more than {limits.max_documents} documents in one stream")
                anchors.clear()
                measured.clear()
                open_anchors.clear()
                nodes = 0
                root = None
                doc_line = 0
                continue
            elif kind is _DocumentEndEvent:
                if expanded > max_expanded:
                    raise TooBig(f"the YAML becomes more than {max_expanded:,} bytes; refusing it")
                yield root, doc_line or event.start_mark.line + 1
                root = None
                doc_line = 0
                continue
            elif kind is _StreamEndEvent:
                return
            else:
                continue
            # A complete value (of ``size`` and ``height``): add it to the collection being
            # built, or make it the document.
            if not doc_line:
                doc_line = event.start_mark.line + 1
            if cur is None:
                root = "<<" if value is _MERGE_KEY else value
                continue
            cur_size += size
            if height >= cur_height:
                cur_height = height + 1
            if cur_list:
                cur.append("<<" if value is _MERGE_KEY else value)
            elif cur_key is _NO_KEY:
                if type(value) is str:
                    cur_key = value
                elif type(value) is dict or type(value) is list:
                    raise Refused(
                        "a mapping key is a collection, not a string; JSON keys are strings"
                    )
                else:
                    cur_key = _key(value)
            elif cur_key is _MERGE_KEY:
                if cur_merges is None:
                    cur_merges = []
                cur_merges.append(value)
                cur_key = _NO_KEY
            else:
                cur_recount = cur_recount or cur_key in cur
                cur[cur_key] = "<<" if value is _MERGE_KEY else value
                cur_key = _NO_KEY
    except BudgetExceeded as err:
        raise Located(err.reason, doc_line or event.start_mark.line + 1, limit=True) from None
    except (ValueError, OverflowError, RecursionError) as err:
        line = event.start_mark.line + 1 if getattr(event, "start_mark", None) else 0
        if isinstance(err, TooBig):
            line = doc_line or line
        reason = "YAML nested too deeply" if isinstance(err, RecursionError) else str(err)
        hit = isinstance(err, TooBig | TooDeep | RecursionError)
        raise Located(reason, line, limit=hit) from None


def _size(value: Any) -> int:
    """Nodes of plain JSON data (every collection and scalar), without recursion."""
    count = 0
    stack: list[Any] = [value]
    while stack:
        current = stack.pop()
        count += 1
        if type(current) is dict:
            count += len(current)  # the keys
            stack.extend(current.values())
        elif type(current) is list:
            stack.extend(current)
    return count


def _parser(data: str | bytes) -> Any:
    """libyaml's event parser (a state machine with explicit stacks: it never recurses)."""
    if _CParser is not None:
        return _CParser(data)
    return yaml.SafeLoader(data)  # PyYAML's pure-Python parser: also no recursion


def iter_yaml_documents(
    data: str | bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    where: str = "",
    go_yaml: bool = False,
    budget: MemoryBudget | None = None,
) -> Iterator[tuple[Any, int]]:
    """Yield ``(value, line)`` for every document of a YAML stream (an empty document is None).

    ``budget`` (shared with the other texts of the same data; by default the one of the
    enclosing :func:`~resolver.safedata.budget.spending` block, if any) is charged for what
    aliases add. Raises SafeDataError at the first problem (documents before it have been
    yielded).
    """
    check_size(data, limits, where)
    if budget is None:
        budget = current_budget()
    parser = _parser(data)
    documents = _documents(parser, limits, go_yaml, len(data), budget)
    try:
        yield from documents
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        what = err.problem or err.context or "syntax error"
        line = mark.line + 1 if mark is not None else 0
        raise SafeDataError(f"invalid YAML: {what}", line, where) from None
    except yaml.YAMLError as err:
        raise SafeDataError(f"invalid YAML: {err}", 0, where) from None
    except UnicodeError as err:
        raise SafeDataError(f"invalid text: {err}", 0, where) from None
    except Located as err:
        raise SafeDataError(err.reason, err.line, where, limit=err.limit) from None
    finally:
        dispose = getattr(parser, "dispose", None)
        if dispose is not None:
            dispose()


def load_yaml_all(
    data: str | bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    where: str = "",
    go_yaml: bool = False,
    budget: MemoryBudget | None = None,
) -> list[Any]:
    """Every document of a YAML stream (empty documents are None)."""
    documents = iter_yaml_documents(
        data, limits=limits, where=where, go_yaml=go_yaml, budget=budget
    )
    return [value for value, _ in documents]


def load_yaml(
    data: str | bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    where: str = "",
    go_yaml: bool = False,
    budget: MemoryBudget | None = None,
) -> Any:
    """The one document of a YAML text (None when empty); more than one is an error."""
    documents = iter_yaml_documents(
        data, limits=limits, where=where, go_yaml=go_yaml, budget=budget
    )
    first: Any = None
    for index, (value, line) in enumerate(documents):
        if index:
            raise SafeDataError("expected one YAML document, found more", line, where)
        first = value
    return first
