"""Split one catalog file into its objects, each with the line it starts on.

A file is a YAML multi-document stream or a stream of concatenated JSON objects, decided as
operator-registry decides it (``k8s.io/apimachinery`` ``NewYAMLOrJSONDecoder``): a file whose first
non-space character is ``{`` is JSON, anything else is YAML. Called by
:mod:`resolver.catalog.load` for every file of a catalog directory; the caller turns the decoded
dicts into model objects.

Values are decoded by :mod:`resolver.safedata` (orjson; libyaml's event parser with go-yaml v2's
YAML 1.1 types), which returns plain JSON data or refuses the document (nesting, alias bombs by
count and by size, tags and numbers JSON cannot hold); the file's memory budget, which the caller
makes current (:func:`resolver.catalog.load.file_budget`, :func:`resolver.safedata.spending`), is
charged for what YAML aliases add. YAML documents are split on ``---`` lines here, as the
Kubernetes YAML reader does, so that every document knows its first line and one broken document
does not hide the problems of the next ones.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

from resolver import safedata

MAX_ALIAS_EXPANSION = 1_000_000
"""Most YAML nodes a document may expand to through aliases (refuses "billion laughs")."""

MAX_NESTING = 200
"""Deepest nesting accepted: libyaml's composer and the JSON encoders recurse on the C stack, so a
document nested a hundred thousand levels deep would crash the process instead of failing."""

MAX_EXPANDED_BYTES = 32 << 20
"""What one document may become through aliases, in bytes of JSON (or twice its own length, if
more): one anchored 1 MiB string aliased 5,000 times is few nodes and 5 GB rendered."""

LIMITS = safedata.Limits(
    max_bytes=sys.maxsize,  # files are capped by the walk (max_file_bytes)
    max_depth=MAX_NESTING,
    max_nodes=MAX_ALIAS_EXPANSION,
    max_expanded_bytes=MAX_EXPANDED_BYTES,
)

# The Kubernetes YAML reader's document separator: a line starting with "---"; only spaces or a
# comment may follow it on that line.
_SEPARATOR = re.compile(r"^---(.*)$", re.MULTILINE)
# Candidate ends of pretty-printed JSON objects ("}" alone at column 0, as opm writes them).
_JSON_OBJECT_END = re.compile(r"^\}[ \t\r]*$", re.MULTILINE)
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


def _parse_json_stream(text: str) -> ParsedFile:
    out = ParsedFile()
    pos = 0
    line = 1
    # Fast path: opm writes each object pretty-printed and closed by "}" at column 0, so the
    # file can be cut there and each piece handed to orjson. Anything else falls back to the
    # incremental stream decoder from the first piece that does not parse alone.
    for match in _JSON_OBJECT_END.finditer(text):
        end = match.end()
        start = _skip_space(text, pos)
        try:
            obj = safedata.load_json(text[start:end], limits=LIMITS)
        except safedata.SafeDataError:
            break
        line += text.count("\n", pos, start)
        out.objects.append((obj, line))
        line += text.count("\n", start, end)
        pos = end
    try:
        for obj, obj_line, _ in safedata.iter_json_stream(text, pos, limits=LIMITS):
            out.objects.append((obj, obj_line))
    except safedata.SafeDataError as err:
        out.problems.append((err.line or line, err.reason))
    return out


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
        if _spent_out():
            return out
        doc_start = match.end() + 1
        doc_line = sep_line + 1
    _parse_yaml_document(text, doc_start, len(text), doc_line, out)
    return out


def _spent_out() -> bool:
    """Whether the file's memory budget is spent: the documents left would each be refused for
    it again (one line for the file, not one per document), so they are not parsed."""
    budget = safedata.current_budget()
    return budget is not None and budget.spent_out


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
        obj = safedata.load_yaml(chunk, limits=LIMITS, go_yaml=True)
    except safedata.SafeDataError as err:
        out.problems.append((line + err.line - 1 if err.line else obj_line, err.reason))
        return
    out.objects.append((obj, obj_line))
