"""One ResolveSet revision as a ConfigMap, and back: the encoding and its integrity check.

The ConfigMap holds the ResolveSet document (YAML) under ``resolveset.yaml``, is
``immutable: true``, carries labels that link it to its input, its revision number and its
selection hash, and annotations with the full selection hash, the full input name and a sha256
checksum of the document. A document whose checksum does not match (someone deleted the
revision and re-created it with other content: immutable ConfigMaps cannot be edited) is reported
as modified. Pure functions; used by :mod:`pivoter.resolvesets.revisions`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pivoter.resolvesets.naming import (
    LABEL_INPUT_KIND,
    LABEL_INPUT_NAME,
    LABEL_MANAGED_BY,
    LABEL_REVISION,
    LABEL_SELECTION_HASH,
    InputRef,
    label_value,
    revision_name,
    selection_label,
)
from resolver.resolveset import ResolveSet, ResolveSetError, loads

__all__ = [
    "ANNOTATION_CHECKSUM",
    "ANNOTATION_INPUT",
    "ANNOTATION_SELECTION_HASH",
    "DATA_KEY",
    "REVISIONS_SELECTOR",
    "Revision",
    "checksum",
    "decode",
    "encode",
    "input_keys",
    "input_names",
    "selector",
]

DATA_KEY = "resolveset.yaml"
ANNOTATION_CHECKSUM = "pivoter.io/checksum"
ANNOTATION_SELECTION_HASH = "pivoter.io/selection-hash"
ANNOTATION_INPUT = "pivoter.io/input"
MANAGER = "pivoter"


def checksum(text: str) -> str:
    """``sha256:<hex>`` of the document text."""
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Revision:
    """One stored revision of an input's ResolveSet, as read from its ConfigMap."""

    input: InputRef
    number: int
    name: str
    selection_hash: str
    checksum: str
    """The checksum the ConfigMap's annotation records (what pivoter wrote)."""
    document: str
    """The ResolveSet YAML as stored."""
    uid: str = ""
    created: str = ""
    problem: str = ""
    """Empty when intact; otherwise what is wrong (checksum mismatch, unreadable document)."""

    @property
    def intact(self) -> bool:
        """Whether the stored document is exactly what pivoter wrote."""
        return not self.problem

    def resolveset(self) -> ResolveSet:
        """The ResolveSet document; raises ResolveSetError when it cannot be read."""
        return _parsed(self.document)


@functools.lru_cache(maxsize=16384)
def _parsed(text: str) -> ResolveSet:
    """A stored document, parsed once: revisions are immutable and every pass of an input reads
    its active one (a ResolveSet is frozen, so one copy serves every reader). Sized above the
    revisions a daemon of 3000 inputs reads in turn: a least-recently-used cache smaller than
    a cycle of reads misses every one of them."""
    return loads(text)


def selector(ref: InputRef) -> str:
    """The label selector of every revision of ``ref``."""
    return f"{LABEL_INPUT_KIND}={ref.kind_label},{LABEL_INPUT_NAME}={label_value(ref.name)}"


REVISIONS_SELECTOR = LABEL_INPUT_KIND
"""The label selector of every revision ConfigMap (of every input), for the input controllers'
watch: a revision deleted or re-created by hand is noticed at once."""


def input_names(config_map: Mapping[str, Any], kind: str) -> list[str]:
    """The name of the input of ``kind`` a revision ConfigMap belongs to (by its
    ``pivoter.io/input`` annotation, else its input-name label), for a watch to queue."""
    metadata = config_map.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    owner_kind, _, name = str(annotations.get(ANNOTATION_INPUT) or "").partition("/")
    if owner_kind and name:
        return [name] if owner_kind == kind else []
    if str(labels.get(LABEL_INPUT_KIND) or "") != kind.lower():
        return []
    name = str(labels.get(LABEL_INPUT_NAME) or "")
    return [name] if name else []


def input_keys(config_map: Mapping[str, Any]) -> list[str]:
    """``kind/name`` (the kind in lower case) of the input a revision ConfigMap belongs to, as
    :func:`input_names` reads it: the value an index of the revisions' cache keeps it under."""
    metadata = config_map.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    labels = metadata.get("labels") or {}
    kind, _, name = str(annotations.get(ANNOTATION_INPUT) or "").partition("/")
    if not (kind and name):
        kind, name = (
            str(labels.get(LABEL_INPUT_KIND) or ""),
            str(labels.get(LABEL_INPUT_NAME) or ""),
        )
    return [f"{kind.lower()}/{name}"] if kind and name else []


def encode(ref: InputRef, number: int, resolveset: ResolveSet, namespace: str) -> dict[str, Any]:
    """The ConfigMap of revision ``number`` of ``ref`` holding ``resolveset``."""
    text = resolveset.to_yaml()
    selection_hash = resolveset.selection_hash
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": revision_name(ref, number),
            "namespace": namespace,
            "labels": {
                LABEL_INPUT_KIND: ref.kind_label,
                LABEL_INPUT_NAME: label_value(ref.name),
                LABEL_REVISION: str(number),
                LABEL_SELECTION_HASH: selection_label(selection_hash),
                LABEL_MANAGED_BY: MANAGER,
            },
            "annotations": {
                ANNOTATION_INPUT: str(ref),
                ANNOTATION_SELECTION_HASH: selection_hash,
                ANNOTATION_CHECKSUM: checksum(text),
            },
        },
        "immutable": True,
        "data": {DATA_KEY: text},
    }


def decode(config_map: Mapping[str, Any]) -> Revision | None:
    """The revision a ConfigMap holds, or None when it is not a revision (no input annotation or
    revision label). A revision whose content does not match its checksum, that is not immutable
    or whose document cannot be read is returned with :attr:`Revision.problem` set."""
    metadata = config_map.get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    kind, _, name = str(annotations.get(ANNOTATION_INPUT) or "").partition("/")
    try:
        number = int(str(labels.get(LABEL_REVISION) or ""))
        ref = InputRef(kind, name)
    except ValueError:
        return None
    text = str((config_map.get("data") or {}).get(DATA_KEY) or "")
    recorded = str(annotations.get(ANNOTATION_CHECKSUM) or "")
    selection_hash = str(annotations.get(ANNOTATION_SELECTION_HASH) or "")
    problem = ""
    if recorded != checksum(text):
        problem = (
            f"its {DATA_KEY} does not match the checksum pivoter recorded ({recorded or 'none'}); "
            "it was changed by hand"
        )
    elif config_map.get("immutable") is not True:
        problem = "it is not immutable; it was re-created by hand"
    else:
        try:
            document = _parsed(text)
        except ResolveSetError as exc:
            problem = f"its {DATA_KEY} is not a ResolveSet: {exc}"
        else:
            if document.selection_hash != selection_hash:
                problem = (
                    f"its bundles hash to {document.selection_hash}, not the recorded "
                    f"{selection_hash}; it was changed by hand"
                )
    return Revision(
        input=ref,
        number=number,
        name=str(metadata.get("name") or ""),
        selection_hash=selection_hash,
        checksum=recorded,
        document=text,
        uid=str(metadata.get("uid") or ""),
        created=str(metadata.get("creationTimestamp") or ""),
        problem=problem,
    )
