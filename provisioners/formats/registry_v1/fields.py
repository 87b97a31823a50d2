"""Typed reads of untrusted YAML with the field path in every error.

Bundle content is never trusted: each value read from a CSV, an annotations file or the
BundleDeployment config goes through one of these helpers, which raise with the exact path
(``spec.install.spec.deployments[1].name``) when the shape is wrong. Used by the readers and
:mod:`~provisioners.formats.registry_v1.config`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

JSONObject = dict[str, Any]

Fail = Callable[[str, str], NoReturn]
"""Raises the caller's error type for (field path, problem)."""


def type_name(value: Any) -> str:
    """A reader's name for the YAML type of ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def mapping(value: Any, path: str, fail: Fail, *, required: bool = False) -> JSONObject:
    """``value`` as a mapping (``{}`` when absent and not required)."""
    if value is None:
        if required:
            fail(path, "is required")
        return {}
    if not isinstance(value, dict):
        fail(path, f"must be a mapping, got {type_name(value)}")
    return value


def sequence(value: Any, path: str, fail: Fail, *, required: bool = False) -> list[Any]:
    """``value`` as a list (``[]`` when absent and not required)."""
    if value is None:
        if required:
            fail(path, "is required")
        return []
    if not isinstance(value, list):
        fail(path, f"must be a list, got {type_name(value)}")
    return value


def string(value: Any, path: str, fail: Fail, *, required: bool = True) -> str:
    """``value`` as a non-empty string (``""`` when absent and not required)."""
    if value is None or value == "":
        if required:
            fail(path, "is required")
        return ""
    if not isinstance(value, str):
        fail(path, f"must be a string, got {type_name(value)}")
    return value


def string_map(value: Any, path: str, fail: Fail) -> dict[str, str]:
    """``value`` as a mapping of strings to strings (labels, annotations, node selectors)."""
    result = mapping(value, path, fail)
    for key, item in result.items():
        if not isinstance(key, str) or not isinstance(item, str):
            fail(f"{path}.{key}", f"must map strings to strings, got {type_name(item)}")
    return result


def string_list(value: Any, path: str, fail: Fail, *, required: bool = False) -> list[str]:
    """``value`` as a list of non-empty strings."""
    items = sequence(value, path, fail, required=required)
    for index, item in enumerate(items):
        if not isinstance(item, str) or not item:
            fail(f"{path}[{index}]", f"must be a non-empty string, got {type_name(item)}")
    return items


def port(value: Any, path: str, fail: Fail, default: int) -> int:
    """``value`` as a TCP port number (``default`` when absent)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        fail(path, f"must be a port number between 1 and 65535, got {value!r}")
    return value
