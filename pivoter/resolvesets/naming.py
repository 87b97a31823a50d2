"""Names and labels of ResolveSet revision ConfigMaps, within Kubernetes' length limits.

A revision of input ``Resolution/web`` number 3 is the ConfigMap ``resolution-web-r3``. Names are
kept within 63 characters (a DNS-1123 label, so the name can also be used as a label value) and
label values within 63: what does not fit is shortened and suffixed with a hash of the whole, so
two inputs never share a name. Pure functions; used by :mod:`pivoter.resolvesets.revisions`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__all__ = [
    "LABEL_INPUT_KIND",
    "LABEL_INPUT_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_REVISION",
    "LABEL_SELECTION_HASH",
    "MAX_NAME",
    "InputRef",
    "label_value",
    "revision_name",
    "selection_label",
]

MAX_NAME = 63
"""Longest revision name: a DNS-1123 label."""

LABEL_INPUT_KIND = "pivoter.io/input-kind"
LABEL_INPUT_NAME = "pivoter.io/input-name"
LABEL_REVISION = "pivoter.io/revision"
LABEL_SELECTION_HASH = "pivoter.io/selection-hash"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"

_HASH_CHARS = 10
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True, order=True)
class InputRef:
    """The input a revision belongs to: a cluster-scoped ``Resolution``, ``PlatformOperator`` or
    ``ClusterExtension``."""

    kind: str
    name: str

    def __post_init__(self) -> None:
        if not self.kind or not self.name:
            raise ValueError("an input needs a kind and a name")

    @property
    def kind_label(self) -> str:
        """The kind as it appears in names and labels (lower case)."""
        return self.kind.lower()

    @property
    def cli(self) -> str:
        """The ``INPUT`` argument of ``pivoter history/plan/approve/rollback/unpin``: a
        Resolution's name, ``<kind>/<name>`` for the other kinds."""
        return self.name if self.kind == "Resolution" else f"{self.kind.lower()}/{self.name}"

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_HASH_CHARS]


def label_value(text: str) -> str:
    """``text`` if it is a valid label value (63 characters at most), else a shortened form
    ending in a hash of ``text`` (still unique per text, valid as a label value)."""
    if len(text) <= 63 and _LABEL_VALUE.match(text):
        return text
    cleaned = re.sub(r"[^-A-Za-z0-9_.]", "-", text)[: 63 - _HASH_CHARS - 1].strip("-_.")
    return f"{cleaned}-{_short_hash(text)}" if cleaned else _short_hash(text)


def revision_name(ref: InputRef, revision: int) -> str:
    """The ConfigMap name of revision ``revision`` of ``ref``: ``<kind>-<name>-r<N>``.

    When that exceeds 63 characters the input's name is shortened and followed by a hash of
    the full kind and name, the same for every revision of the input.
    """
    if revision < 1:
        raise ValueError(f"revisions are numbered from 1, not {revision}")
    suffix = f"-r{revision}"
    name = f"{ref.kind_label}-{ref.name}{suffix}"
    if len(name) <= MAX_NAME and "." not in ref.name:
        return name
    digest = _short_hash(f"{ref.kind}/{ref.name}")
    # Reserve room for "-r" and seven digits so that every revision shares the same stem.
    room = MAX_NAME - max(len(suffix), 9) - len(digest) - 1
    stem = f"{ref.kind_label}-{ref.name}".replace(".", "-")[:room].rstrip("-")
    return f"{stem}-{digest}{suffix}"


def selection_label(selection_hash: str) -> str:
    """The label form of a selection hash (``sha256:<hex>`` -> the first 63 hex digits); the
    full hash is kept in an annotation."""
    return label_value(selection_hash.partition(":")[2][:63] or selection_hash)
