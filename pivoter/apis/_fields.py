"""Reading an API object's JSON field by field, each value checked against the type it must have:
the readers behind the typed views of :mod:`pivoter.apis.views`.

A value that is not what its field holds raises :class:`FieldError`, whose message starts with
the field's path (``spec.packages[0].name: expected a string, got a list``), so an object that
got past its CRD schema (stored before the schema said so, or under a CRD without one) is refused
in words a person can act on, never by a TypeError from deep inside pivoter. Absent and null are
the same (a JSON merge patch writes null to remove a field): a default applies to both.
Messages show a value only when it is short, and never the digits of a huge number.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["INT64_MAX", "Annotations", "FieldError", "Fields", "describe"]

INT64_MAX = 2**63 - 1
"""The largest integer an API field holds (OpenAPI ``int64``)."""
_SHOWN = 60
"""How much of a string value or key a message shows."""
_DIGITS = re.compile("[0-9]+")
"""A whole number as an annotation writes it: ASCII digits only (``int()`` would also take
signs, spaces, underscores and other scripts' digits)."""
_INT64_DIGITS = len(str(INT64_MAX))
_PLAIN_KEY = re.compile("[A-Za-z0-9._/-]{1,63}")

Choice = TypeVar("Choice", bound=str)


class FieldError(ValueError):
    """A field of an input object holds a value pivoter cannot read; the message names the field
    and what it must hold. Fix the object: reading it again gives the same answer."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def describe(value: object) -> str:
    """``value`` as a message shows it: the value itself when it is short, else its kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # str() of a number with thousands of digits raises (and says nothing to a reader).
        return str(value) if value.bit_length() <= 64 else "a number of more than 64 bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return _shown(value)
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def _shown(text: str) -> str:
    """``text`` quoted, control characters escaped, cut to a readable length."""
    return repr(text[:_SHOWN]) + ("..." if len(text) > _SHOWN else "")


def _key(path: str, key: object) -> str:
    """The path of a map entry whose key comes from the object (a label, an annotation)."""
    shown = key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else describe(key)
    return f"{path}[{shown}]"


def _field(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _expected(path: str, what: str, value: object) -> FieldError:
    return FieldError(path, f"expected {what}, got {describe(value)}")


def _frozen_map(path: str, value: object) -> Mapping[str, object]:
    """A read-only copy of a map with string keys (its values are kept as they are)."""
    if not isinstance(value, Mapping):
        raise _expected(path, "a map", value)
    copy: dict[str, object] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise FieldError(_key(path, key), "expected a string key")
        copy[key] = item
    return types.MappingProxyType(copy)


def _whole_number(path: str, value: object, minimum: int, maximum: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON does not tell 600 from 600.0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _expected(path, "a whole number", value)
    if value < minimum:
        raise FieldError(path, f"must be at least {minimum}, got {describe(value)}")
    if value > maximum:
        raise FieldError(path, f"must be at most {maximum}, got {describe(value)}")
    return value


def _one_of(path: str, value: str, choices: tuple[Choice, ...]) -> Choice:
    for choice in choices:
        if value == choice:
            return choice
    raise FieldError(path, f"must be one of {', '.join(choices)}, got {describe(value)}")


@dataclass(frozen=True, slots=True)
class Fields:
    """One JSON object of an input and where it sits in it (``""``: the object itself); each
    method reads one field of it, checked."""

    path: str
    data: Mapping[str, object]

    @classmethod
    def root(cls, obj: object) -> Fields:
        """The object itself (refused when it is not a map)."""
        if not isinstance(obj, Mapping):
            raise _expected("object", "a map", obj)
        return cls("", obj)

    def where(self, name: str) -> str:
        """The path of field ``name``."""
        return _field(self.path, name)

    def _get(self, name: str) -> object:
        return self.data.get(name)

    def child(self, name: str) -> Fields | None:
        """Field ``name``, a map (None when absent)."""
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise _expected(self.where(name), "a map", value)
        return Fields(self.where(name), value)

    def required_child(self, name: str) -> Fields:
        """Field ``name``, a map that must be there."""
        found = self.child(name)
        if found is None:
            raise FieldError(self.where(name), "required")
        return found

    def string(self, name: str, default: str = "") -> str:
        """Field ``name``, a string (``default`` when absent)."""
        value = self._get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise _expected(self.where(name), "a string", value)
        return value

    def required_string(self, name: str) -> str:
        """Field ``name``, a string that must be there and not empty."""
        value = self.string(name)
        if not value:
            raise FieldError(self.where(name), "required")
        return value

    def choice(self, name: str, choices: tuple[Choice, ...], default: Choice) -> Choice:
        """Field ``name``, one of ``choices`` (``default`` when absent)."""
        value = self.string(name)
        return _one_of(self.where(name), value, choices) if value else default

    def integer(self, name: str, *, minimum: int, maximum: int = INT64_MAX) -> int | None:
        """Field ``name``, a whole number from ``minimum`` to ``maximum`` (None when absent)."""
        value = self._get(name)
        if value is None:
            return None
        return _whole_number(self.where(name), value, minimum, maximum)

    def boolean(self, name: str, default: bool) -> bool:
        """Field ``name``, true or false (``default`` when absent)."""
        value = self._get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _expected(self.where(name), "true or false", value)
        return value

    def _list(self, name: str) -> list[object] | tuple[object, ...]:
        value = self._get(name)
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise _expected(self.where(name), "a list", value)
        return value

    def objects(self, name: str) -> tuple[Fields, ...]:
        """Field ``name``, a list of maps (empty when absent)."""
        out = []
        for index, item in enumerate(self._list(name)):
            path = f"{self.where(name)}[{index}]"
            if not isinstance(item, Mapping):
                raise _expected(path, "a map", item)
            out.append(Fields(path, item))
        return tuple(out)

    def strings(self, name: str) -> tuple[str, ...]:
        """Field ``name``, a list of strings (empty when absent)."""
        out = []
        for index, item in enumerate(self._list(name)):
            if not isinstance(item, str):
                raise _expected(f"{self.where(name)}[{index}]", "a string", item)
            out.append(item)
        return tuple(out)

    def string_map(self, name: str) -> Mapping[str, str]:
        """Field ``name``, a map of strings to strings, read-only (empty when absent)."""
        value = self._get(name)
        if value is None:
            return types.MappingProxyType({})
        strings: dict[str, str] = {}
        for key, item in _frozen_map(self.where(name), value).items():
            if not isinstance(item, str):
                raise _expected(_key(self.where(name), key), "a string", item)
            strings[key] = item
        return types.MappingProxyType(strings)

    def free_form(self, name: str) -> Mapping[str, object]:
        """Field ``name``, a map whose content is another reader's to check (a provisioner's
        configuration), read-only at its top level (empty when absent)."""
        value = self._get(name)
        if value is None:
            return types.MappingProxyType({})
        return _frozen_map(self.where(name), value)


@dataclass(frozen=True, slots=True)
class Annotations:
    """An object's ``metadata.annotations``; each method reads one annotation's text as the
    value it stands for (an unset or empty annotation is its default)."""

    path: str
    data: Mapping[str, object]

    @classmethod
    def of(cls, metadata: Fields) -> Annotations:
        """The annotations of ``metadata`` (none when absent)."""
        found = metadata.child("annotations")
        if found is None:
            return cls(metadata.where("annotations"), {})
        return cls(found.path, found.data)

    def where(self, key: str) -> str:
        """The path of annotation ``key``."""
        return _key(self.path, key)

    def text(self, key: str) -> str:
        """Annotation ``key`` as written ("" when unset)."""
        value = self.data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise _expected(self.where(key), "a string", value)
        return value

    def number(self, key: str, *, minimum: int, maximum: int = INT64_MAX) -> int | None:
        """Annotation ``key``, a whole number in decimal digits (None when unset)."""
        text = self.text(key)
        if not text:
            return None
        if not _DIGITS.fullmatch(text):
            raise _expected(self.where(key), f"a whole number from {minimum}", text)
        if len(text) > _INT64_DIGITS:  # int() refuses thousands of digits; none fit anyway
            raise FieldError(self.where(key), f"must be at most {maximum}, got {len(text)} digits")
        return _whole_number(self.where(key), int(text), minimum, maximum)

    def flag(self, key: str) -> bool:
        """Annotation ``key``, ``true`` or ``false`` in any case (false when unset)."""
        text = self.text(key)
        if not text:
            return False
        return _one_of(self.where(key), text.lower(), ("true", "false")) == "true"

    def choice(self, key: str, choices: tuple[Choice, ...], default: Choice) -> Choice:
        """Annotation ``key``, one of ``choices`` (``default`` when unset)."""
        text = self.text(key)
        return _one_of(self.where(key), text, choices) if text else default
