"""Safe parsing of untrusted manifest files (YAML or JSON, single- or multi-document).

Used by the formats (plain+v0 now, registry+v1 later). Parsing uses the C safe loader; before a
document is constructed its node graph is walked with a budget, so an alias bomb ("billion
laughs") or a recursive alias is refused instead of eating memory, and file size and document
count are capped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from provisioners.formats.base import InvalidManifestError

# The C loader is ~10x faster; PyYAML wheels ship it, source builds without libyaml may not.
_Base: type[yaml.CSafeLoader] | type[yaml.SafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _Loader(_Base):  # type: ignore[valid-type,misc]
    """The safe loader without YAML's timestamp type: like Kubernetes, which reads YAML as JSON,
    an unquoted ``createdAt: 2022-01-01`` stays a string instead of becoming a datetime that JSON
    (and so the API server) cannot take."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
        for first, resolvers in _Base.yaml_implicit_resolvers.items()
    }


@dataclass(frozen=True)
class ManifestLimits:
    """Caps on one manifest file."""

    max_file_bytes: int = 32 << 20
    max_documents: int = 10_000
    max_nodes: int = 2_000_000
    """Nodes visited with aliases expanded, per file; the guard against alias bombs."""


def _count_nodes(node: yaml.Node, budget: int, where: str) -> int:
    """Walk ``node`` expanding aliases (shared nodes are revisited); fail past ``budget``."""
    stack: list[yaml.Node] = [node]
    visited = 0
    while stack:
        current = stack.pop()
        visited += 1
        if visited > budget:
            raise InvalidManifestError(
                f"{where}: the document expands to more than {budget} YAML nodes (aliases "
                "included); refusing a possible alias bomb"
            )
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append(key)
                stack.append(value)
    return visited


def load_documents(path: Path, limits: ManifestLimits | None = None) -> list[Any]:
    """Parse every non-empty document of a YAML or JSON file, enforcing ``limits``."""
    limits = limits or ManifestLimits()
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise InvalidManifestError(
            f"{path.name}: {size} bytes exceeds the manifest file limit of {limits.max_file_bytes}"
        )
    return parse_documents(path.read_bytes(), path.name, limits)


def parse_documents(text: bytes, where: str, limits: ManifestLimits | None = None) -> list[Any]:
    """Parse every non-empty document of a YAML or JSON stream named ``where`` (for messages)."""
    limits = limits or ManifestLimits()
    if len(text) > limits.max_file_bytes:
        raise InvalidManifestError(
            f"{where}: {len(text)} bytes exceeds the manifest file limit of {limits.max_file_bytes}"
        )
    loader = _Loader(text)
    documents: list[Any] = []
    budget = limits.max_nodes
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if index > limits.max_documents:
                raise InvalidManifestError(
                    f"{where}: more than {limits.max_documents} documents in one file"
                )
            if node is None:
                continue
            budget -= _count_nodes(node, budget, f"{where} document {index}")
            document = loader.construct_document(node)
            if document is not None:
                documents.append(document)
    except yaml.YAMLError as exc:
        raise InvalidManifestError(f"{where}: not valid YAML or JSON: {exc}") from exc
    finally:
        loader.dispose()
    return documents
