"""What an apply changes in an object that already exists: the fields that differ between the
object as it is and the object the API server answered (a dry run's answer: nothing stored).

A plan says which objects a pivot adds and removes; for the objects it applies again it must say
which of their fields would change, because some changes have effects of their own: a new pod
template replaces a workload's pods, which a takeover (``adoptExisting``) must never do. The
applier reads the live objects anyway (ownership, :mod:`provisioners.apply.ownership`), so
comparing them with the dry run's answers costs no extra request.

Pure: two JSON objects in, a :class:`FieldChanges` out. What the server manages (``status``,
``resourceVersion``, ``managedFields``, ``generation``, ``uid``, ``creationTimestamp``,
``selfLink``) is left out; label and annotation keys are reported apart from the other fields;
paths are written for people (``spec.template.spec.containers[name=manager].env[name=X].value``,
list items keyed by ``name`` where every item has a distinct one, ``data['config.yaml']`` for a
key that is not a plain word) and never carry a value, so a Secret's data does not leak.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = [
    "IGNORED_METADATA",
    "MAX_PATHS",
    "WORKLOAD_KINDS",
    "FieldChanges",
    "KeyChange",
    "KeyChangeKind",
    "field_changes",
]

MAX_PATHS = 50
"""Field paths (and, apart, label and annotation keys) kept per object; the counts say how many
there were."""

IGNORED_METADATA = frozenset(
    {"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp", "selfLink"}
)
"""Metadata the API server manages: it changes on every write and says nothing of the content."""

WORKLOAD_KINDS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet")})
"""(group, kind) of the workloads whose pods are replaced when their ``spec.template`` changes."""

_KEYED_METADATA = {"labels": "label", "annotations": "annotation"}
_IDENTIFYING = frozenset({"apiVersion", "kind", "status"})
"""Top-level fields not compared: the identity (absent from the items of a list read) and the
status (the controllers', not the apply's)."""
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")

Segment = str | int | tuple[str, str]
"""One step of a path: a map key, a list index, or a list item keyed by (``name``, its value)."""


class KeyChangeKind(StrEnum):
    """How one label or annotation key changes."""

    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One label or annotation key the apply adds, changes or removes."""

    field: str
    """``labels`` or ``annotations``."""
    key: str
    change: KeyChangeKind

    def __str__(self) -> str:
        return f"{_KEYED_METADATA.get(self.field, self.field)} {self.key} {self.change}"


@dataclass(frozen=True, slots=True)
class FieldChanges:
    """The fields an apply changes in one existing object (see the module docstring)."""

    fields: tuple[str, ...] = ()
    """Changed field paths, at most :data:`MAX_PATHS`, in the object's order."""
    metadata: tuple[KeyChange, ...] = ()
    """Label and annotation keys added, changed or removed, at most :data:`MAX_PATHS`."""
    field_count: int = 0
    """How many field paths changed (``fields`` may show fewer)."""
    metadata_count: int = 0
    """How many label and annotation keys changed (``metadata`` may show fewer)."""
    replaces_pods: bool = False
    """A workload (:data:`WORKLOAD_KINDS`) whose ``spec.template`` changes: its pods are
    replaced."""

    def __bool__(self) -> bool:
        return bool(self.field_count or self.metadata_count)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly form: ``fields`` and ``metadata`` (words), and ``moreFields`` /
        ``moreMetadata`` when the lists were cut."""
        data: dict[str, Any] = {
            "fields": list(self.fields),
            "metadata": [str(change) for change in self.metadata],
        }
        if self.field_count > len(self.fields):
            data["moreFields"] = self.field_count - len(self.fields)
        if self.metadata_count > len(self.metadata):
            data["moreMetadata"] = self.metadata_count - len(self.metadata)
        return data


def field_changes(
    live: Mapping[str, Any], answer: Mapping[str, Any], *, limit: int = MAX_PATHS
) -> FieldChanges:
    """What changes from ``live`` (the object as read) to ``answer`` (the object the API server
    answered to the apply); empty (false) when nothing but server-managed fields differs."""
    paths: list[str] = []
    field_count = 0
    for path in _object_paths(live, answer):
        field_count += 1
        if len(paths) < limit:
            paths.append(path)
    live_meta = _mapping(live.get("metadata"))
    answer_meta = _mapping(answer.get("metadata"))
    keys = [
        change
        for name in _KEYED_METADATA
        for change in _key_changes(name, _mapping(live_meta.get(name)), answer_meta.get(name))
    ]
    return FieldChanges(
        fields=tuple(paths),
        metadata=tuple(keys[:limit]),
        field_count=field_count,
        metadata_count=len(keys),
        replaces_pods=_replaces_pods(live, answer),
    )


def _object_paths(live: Mapping[str, Any], answer: Mapping[str, Any]) -> Iterator[str]:
    for key in _keys(live, answer):
        if key in _IDENTIFYING:
            continue
        if key == "metadata":
            before = _mapping(live.get(key))
            after = _mapping(answer.get(key))
            for name in _keys(before, after):
                if name in IGNORED_METADATA or name in _KEYED_METADATA:
                    continue
                for steps in _diff(before.get(name, _ABSENT), after.get(name, _ABSENT)):
                    yield _render(["metadata", name, *steps])
            continue
        for steps in _diff(live.get(key, _ABSENT), answer.get(key, _ABSENT)):
            yield _render([key, *steps])


def _replaces_pods(live: Mapping[str, Any], answer: Mapping[str, Any]) -> bool:
    api_version = str(answer.get("apiVersion") or live.get("apiVersion") or "")
    kind = str(answer.get("kind") or live.get("kind") or "")
    if (api_version.rpartition("/")[0], kind) not in WORKLOAD_KINDS:
        return False
    before = _mapping(live.get("spec")).get("template", _ABSENT)
    after = _mapping(answer.get("spec")).get("template", _ABSENT)
    return any(True for _ in _diff(before, after))


def _key_changes(field: str, before: Mapping[str, Any], after: Any) -> Iterator[KeyChange]:
    after = _mapping(after)
    for key in after:
        if key not in before:
            yield KeyChange(field, key, KeyChangeKind.ADDED)
        elif before[key] != after[key]:
            yield KeyChange(field, key, KeyChangeKind.CHANGED)
    for key in before:
        if key not in after:
            yield KeyChange(field, key, KeyChangeKind.REMOVED)


class _Absent:
    """A field that is not there (distinct from a field set to null)."""


_ABSENT = _Absent()


def _diff(before: Any, after: Any) -> Iterator[list[Segment]]:
    """The relative paths (lists of steps) where ``before`` and ``after`` differ: ``[]`` when
    they differ as a whole (a scalar, a type, a field added or removed)."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in _keys(before, after):
            for steps in _diff(before.get(key, _ABSENT), after.get(key, _ABSENT)):
                yield [key, *steps]
        return
    if _is_list(before) and _is_list(after):
        yield from _diff_lists(before, after)
        return
    if type(before) is not type(after) or before != after:
        yield []


def _diff_lists(before: Sequence[Any], after: Sequence[Any]) -> Iterator[list[Segment]]:
    named_before, named_after = _by_name(before), _by_name(after)
    if named_before is None or named_after is None:
        for index in range(max(len(before), len(after))):
            old = before[index] if index < len(before) else _ABSENT
            new = after[index] if index < len(after) else _ABSENT
            for steps in _diff(old, new):
                yield [index, *steps]
        return
    common = [name for name in named_after if name in named_before]
    if common != [name for name in named_before if name in named_after]:
        yield []  # the same items in another order (env, containers: the order matters)
    for name in _keys(named_before, named_after):
        old = named_before.get(name, _ABSENT)
        new = named_after.get(name, _ABSENT)
        for steps in _diff(old, new):
            yield [("name", name), *steps]


def _by_name(items: Sequence[Any]) -> dict[str, Any] | None:
    """The items by their ``name``, in order; None unless every item is a map with a distinct
    string ``name``."""
    named: dict[str, Any] = {}
    for item in items:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str) or name in named:
            return None
        named[name] = item
    return named


def _keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys of both, ``after``'s order first (the order people read the new object in)."""
    return [*after, *(key for key in before if key not in after)]


def _render(steps: Sequence[Segment]) -> str:
    text = ""
    for step in steps:
        if isinstance(step, tuple):
            text += f"[{step[0]}={step[1]}]"
        elif isinstance(step, int):
            text += f"[{step}]"
        elif _PLAIN_KEY.fullmatch(step):
            text += f".{step}" if text else step
        else:
            quoted = step.replace("\\", "\\\\").replace("'", "\\'")
            text += f"['{quoted}']"
    return text


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
