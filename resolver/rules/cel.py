"""CEL rules of ``olm.constraint`` properties (``{"cel": {"rule": ...}}``), as OLM v0 runs them.

A rule sees the bundle's ``properties`` (a list of ``{type, value}``) and may call
``semver_compare(a, b)``. Kept apart from :mod:`resolver.rules.predicates` so that the CEL
library (its parser and types take a noticeable time to import) loads only when a catalog
actually holds a CEL constraint.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError

from resolver.versions import parse_version

__all__ = ["CelRuleError", "compile_rule"]


class CelRuleError(ValueError):
    """The rule is not valid CEL."""


def _semver_compare(a: celtypes.Value, b: celtypes.Value) -> celtypes.IntType:
    left, right = parse_version(str(a)), parse_version(str(b))
    return celtypes.IntType(left.compare(right))


@lru_cache(maxsize=512)
def _program(rule: str) -> celpy.Runner:
    env = celpy.Environment()
    try:
        ast = env.compile(rule)
    except CELParseError as err:
        raise CelRuleError(f"invalid CEL rule {rule!r}: {err}") from None
    return env.program(ast, functions={"semver_compare": _semver_compare})


def compile_rule(rule: str) -> Callable[[list[dict[str, Any]]], bool]:
    """Return a test of a bundle's properties (as JSON ``{type, value}`` objects) against
    ``rule``: true only when the rule evaluates to ``true``; an evaluation error is false.
    Raises CelRuleError when the rule does not parse."""
    program = _program(rule)

    def test(properties: list[dict[str, Any]]) -> bool:
        try:
            result = program.evaluate({"properties": json_to_cel(properties)})
        except Exception:
            return False
        return isinstance(result, celtypes.BoolType) and bool(result)

    return test
