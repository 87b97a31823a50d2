"""Split one catalog file into its objects, each with the line it starts on.

A file is a YAML multi-document stream or a stream of concatenated JSON objects, decided as
operator-registry decides it (``k8s.io/apimachinery`` ``NewYAMLOrJSONDecoder``): a file whose first
non-space character is ``{`` is JSON, anything else is YAML. Called by
:mod:`resolver.catalog.load` for every file of a catalog directory; the caller turns the decoded
dicts into model objects.

Parsing is done by C parsers (orjson, libyaml through ``yaml.CSafeLoader``); YAML documents are
split on ``---`` lines here, as the Kubernetes YAML reader does, so that every document knows its
first line and one broken document does not hide the problems of the next ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

MAX_ALIAS_EXPANSION = 1_000_000
"""Most YAML nodes a document may expand to through aliases (refuses "billion laughs")."""

MAX_NESTING = 200
"""Deepest YAML nesting accepted: libyaml's composer recurses on the C stack, so a document nested
a hundred thousand levels deep would crash the process instead of failing."""


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _CatalogYAMLLoader(yaml.CSafeLoader):
    """libyaml's safe loader with the YAML-1.1 implicit types Kubernetes' YAML also leaves alone.

    ``sigs.k8s.io/yaml`` keeps timestamp-looking scalars as strings, and has no ``=`` value type;
    PyYAML would turn the first into ``datetime`` and fail on the second. ``resolve`` is the
    base class's, minus the path-resolver machinery catalogs never use: it runs for every node.
    """

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """Do nothing: no path resolvers are registered."""

    def ascend_resolver(self) -> None:
        """Do nothing: no path resolvers are registered."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        """Return the tag of a node without explicit tag (YAML 1.1 implicit types, as PyYAML)."""
        if kind is yaml.ScalarNode:
            if implicit[0]:
                resolvers = _IMPLICIT.get(value[:1])
                if resolvers:
                    for tag, regexp in resolvers:
                        if regexp.match(value):
                            return str(tag)
            return _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP


_CatalogYAMLLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:value")
    ]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}

# YAML 1.1 booleans as go-yaml v2 (under sigs.k8s.io/yaml) reads them: PyYAML lacks y/Y/n/N.
_BOOLS = {
    **dict.fromkeys(
        ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True
    ),
    **dict.fromkeys(
        ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False
    ),
}
_BOOL_TAG = "tag:yaml.org,2002:bool"
_BOOL_PATTERN = re.compile("^(?:" + "|".join(_BOOLS) + ")$")
for _first in "yYnNtTfFoO":
    _CatalogYAMLLoader.yaml_implicit_resolvers[_first] = [
        (_BOOL_TAG, _BOOL_PATTERN),
        *(
            r
            for r in _CatalogYAMLLoader.yaml_implicit_resolvers.get(_first, [])
            if r[0] != _BOOL_TAG
        ),
    ]


def _construct_bool(loader: yaml.BaseLoader, node: yaml.Node) -> bool:
    return _BOOLS[str(node.value)]


_CatalogYAMLLoader.add_constructor(_BOOL_TAG, _construct_bool)
_IMPLICIT = _CatalogYAMLLoader.yaml_implicit_resolvers

# The Kubernetes YAML reader's document separator: a line starting with "---"; only spaces or a
# comment may follow it on that line.
_SEPARATOR = re.compile(r"^---(.*)$", re.MULTILINE)
# Candidate ends of pretty-printed JSON objects ("}" alone at column 0, as opm writes them).
_JSON_OBJECT_END = re.compile(r"^\}[ \t\r]*$", re.MULTILINE)
# Something that may be a YAML anchor; only documents with anchors can hold aliases.
_ANCHOR = re.compile(r"(?:^|[ \t\[{,:-])&[^ \t\r\n,\[\]{}]")
_SPACE = re.compile(r"\s*")
_CONTENT_LINE = re.compile(r"^[ \t]*[^ \t\r\n#]", re.MULTILINE)


@dataclass(slots=True)
class ParsedFile:
    """The objects decoded from one file (dict and 1-based start line) and any problems found.

    ``problems`` holds ``(line, message)`` pairs; line 0 means the whole file.
    """

    objects: list[tuple[Any, int]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)


def parse_text(text: str) -> ParsedFile:
    """Decode every object of one file's text (YAML stream or concatenated JSON)."""
    if text.startswith("{", _skip_space(text, 0)):
        result = _parse_json_stream(text)
        if result.problems and len(result.objects) <= 1:
            # The Kubernetes decoder falls back to YAML while the stream is still ambiguous
            # (at most one JSON object read): YAML is a superset of JSON.
            as_yaml = _parse_yaml_stream(text)
            if not as_yaml.problems:
                return as_yaml
        return result
    return _parse_yaml_stream(text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _parse_json_stream(text: str) -> ParsedFile:
    out = ParsedFile()
    pos = 0
    line = 1
    length = len(text)
    # Fast path: opm writes each object pretty-printed and closed by "}" at column 0, so the
    # file can be cut there and each piece handed to orjson. Anything else falls back to the
    # stdlib's incremental decoder from the first piece that does not parse alone.
    for match in _JSON_OBJECT_END.finditer(text):
        end = match.end()
        start = _skip_space(text, pos)
        try:
            obj = orjson.loads(text[start:end])
        except orjson.JSONDecodeError:
            break
        line += text.count("\n", pos, start)
        out.objects.append((obj, line))
        line += text.count("\n", start, end)
        pos = end
    decoder = json.JSONDecoder()
    while True:
        start = _skip_space(text, pos)
        if start >= length:
            return out
        line += text.count("\n", pos, start)
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as err:
            out.problems.append((err.lineno, f"invalid JSON: {err.msg} (column {err.colno})"))
            return out
        except RecursionError:
            out.problems.append((line, "invalid JSON: nested too deeply"))
            return out
        out.objects.append((obj, line))
        line += text.count("\n", start, end)
        pos = end


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


def _parse_yaml_stream(text: str) -> ParsedFile:
    out = ParsedFile()
    doc_start = 0  # offset of the current document's first character
    doc_line = 1  # its line number
    for match in _SEPARATOR.finditer(text):
        sep_line = doc_line + text.count("\n", doc_start, match.start())
        trailer = match.group(1).strip()
        if trailer and not trailer.startswith("#"):
            out.problems.append(
                (sep_line, f"invalid YAML document separator: {match.group(0).strip()!r}")
            )
            return out
        _parse_yaml_document(text, doc_start, match.start(), doc_line, out)
        doc_start = match.end() + 1
        doc_line = sep_line + 1
    _parse_yaml_document(text, doc_start, len(text), doc_line, out)
    return out


def _parse_yaml_document(text: str, start: int, end: int, line: int, out: ParsedFile) -> None:
    if start >= end:
        return
    chunk = text[start:end]
    content = _CONTENT_LINE.search(chunk)
    if content is None:
        # Only blank lines or comments: Kubernetes' decoder still hands this document on, and it
        # decodes to null, which opm rejects as an object without schema.
        out.problems.append((line, "empty YAML document (blank or only comments): no schema"))
        return
    obj_line = line + chunk.count("\n", 0, content.start())
    try:
        if _may_nest_deeply(chunk):
            _check_nesting(chunk)
        loader = _CatalogYAMLLoader(chunk)
        try:
            node = loader.get_single_node()
            if node is not None and "&" in chunk and "*" in chunk and _ANCHOR.search(chunk):
                _check_alias_expansion(node)
            obj = _construct(loader, node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = line + mark.line if mark is not None else obj_line
        what = err.problem or err.context or "syntax error"
        out.problems.append((where, f"invalid YAML: {what}"))
        return
    except yaml.YAMLError as err:
        out.problems.append((obj_line, f"invalid YAML: {err}"))
        return
    except (_AliasBomb, _TooDeep) as err:
        out.problems.append((obj_line, str(err)))
        return
    except RecursionError:
        out.problems.append((obj_line, "invalid YAML: nested too deeply"))
        return
    out.objects.append((obj, obj_line))


_SCALARS = frozenset(("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool"))
_NULL = "tag:yaml.org,2002:null"


class _Unusual(Exception):
    """A node the fast constructor leaves to PyYAML's (merge keys, explicit tags)."""


def _construct(loader: _CatalogYAMLLoader, root: yaml.Node) -> Any:
    """Build the Python value of a composed document.

    Does what ``SafeConstructor`` does for the plain JSON-like documents catalogs are made of,
    several times faster (no per-node generator machinery); anything unusual is handed to
    PyYAML's own constructor. A plain function with an explicit memo (not a recursive closure):
    loading runs with the cyclic GC off, and a closure cycle would keep every document's nodes
    and text alive until the end of the load.
    """
    memo: dict[int, Any] = {}
    try:
        return _build(root, memo, loader)
    except _Unusual:
        return loader.construct_document(root)
    finally:
        memo.clear()


def _build(node: yaml.Node, memo: dict[int, Any], loader: _CatalogYAMLLoader) -> Any:
    key = id(node)
    if key in memo:
        return memo[key]
    tag = node.tag
    value: Any
    if tag == _STR:
        value = node.value
    elif tag == _MAP:
        value = {}
        memo[key] = value
        for k, v in node.value:
            if k.tag != _STR:
                if k.tag == "tag:yaml.org,2002:merge":
                    raise _Unusual
                kv = _build(k, memo, loader)
                if isinstance(kv, list | dict):
                    raise _Unusual
            else:
                kv = k.value
            value[kv] = _build(v, memo, loader)
        return value
    elif tag == _SEQ:
        value = []
        memo[key] = value
        for n in node.value:
            value.append(_build(n, memo, loader))
        return value
    elif tag == _NULL:
        value = None
    elif tag == _BOOL_TAG:
        value = _BOOLS[node.value]
    elif tag in _SCALARS:
        value = loader.construct_object(node, deep=True)
    else:
        raise _Unusual
    memo[key] = value
    return value


class _AliasBomb(Exception):
    pass


class _TooDeep(Exception):
    pass


_DEEP_INDENT = "\n" + " " * MAX_NESTING
# Block collections nest within one line only as "- - - x" or "? ? x"; four in a row is rare, and
# searching for four is much cheaper than searching for MAX_NESTING.
_STACKED_INDICATORS = re.compile(r"[-?][ \t]+[-?][ \t]+[-?][ \t]+[-?][ \t]")


def _may_nest_deeply(chunk: str) -> bool:
    """Cheap test: can ``chunk`` nest deeper than MAX_NESTING? (False for nearly every document.)

    Every level of nesting needs a flow opener (``[``, ``{``), one more column of indentation,
    or one more ``- ``/``? `` indicator on the same line; documents with few of each cannot nest
    deeply.
    """
    return (
        chunk.count("[") + chunk.count("{") > MAX_NESTING // 2
        or _DEEP_INDENT in chunk
        or _STACKED_INDICATORS.search(chunk) is not None
    )


def _check_nesting(chunk: str) -> None:
    """Walk the parser's events (no recursion) and refuse documents nested too deeply."""
    depth = 0
    for event in yaml.parse(chunk, Loader=_CatalogYAMLLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise _TooDeep(f"YAML nested deeper than {MAX_NESTING} levels; refusing it")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _check_alias_expansion(root: yaml.Node) -> None:
    """Refuse a document whose aliases expand it beyond :data:`MAX_ALIAS_EXPANSION` nodes.

    Sizes are memoised per node, so this costs one visit per distinct node however often aliases
    repeat them (a "billion laughs" document is a few dozen distinct nodes).
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes and not children_done:
            continue
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if not children_done:
            sizes[key] = -1  # in progress: a cycle back here counts as one node
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        total = 1 + sum(max(sizes.get(id(c), 1), 1) for c in children)
        if total > MAX_ALIAS_EXPANSION:
            raise _AliasBomb(
                f"YAML aliases expand this document beyond {MAX_ALIAS_EXPANSION:,} nodes; "
                "refusing it (alias bomb?)"
            )
        sizes[key] = total
