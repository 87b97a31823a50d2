"""The one loader for YAML and JSON that comes from outside: catalogs, bundles, values, templates.

Every YAML or JSON text pivoter did not write itself goes through this module. It returns plain
JSON data only -- ``dict`` with ``str`` keys, ``list``, ``str``, ``int``, ``float``, ``bool``,
``None``, as a tree (no shared or cyclic parts) -- or raises :class:`SafeDataError`, one line
saying what is wrong and where. What it refuses, and why:

* **Size** over ``Limits.max_bytes``: refused before parsing.
* **Nesting** deeper than ``Limits.max_depth`` (200): libyaml's composer and most JSON encoders
  recurse on the C stack, so a 100,000-deep ``[[[[`` would crash the process (SIGSEGV), and
  orjson cannot write more than 254 levels. YAML is built here from libyaml's *events* (its
  parser keeps explicit stacks and never recurses), counting depth as it goes; JSON is parsed by
  orjson, which stops at 1024 levels by itself, and the result's depth is checked at C speed
  (orjson writing it inside 54 extra levels) and, only past that, by a loop without recursion.
* **Alias expansion** past ``Limits.max_nodes`` nodes per document (and copied by aliases into
  one text), aliases expanded ("billion laughs"), or past ``Limits.max_expanded_bytes`` bytes of
  what the text becomes (one anchored megabyte aliased thousands of times: few nodes, gigabytes
  written out), counted as it is built; a recursive alias (``&a [*a]``) and an undefined one are
  errors. Aliased values are copied, so the result is a tree that every encoder can write.
* **Memory across texts**: a :class:`MemoryBudget` shared by the calls that build one piece of data
  (a catalog file and the manifests inlined in it; ``with spending(budget):``) is charged by its
  owner with each text's estimated cost (:func:`text_cost`) and by the loader with what aliases add
  (:mod:`.budget`).
* **Values JSON cannot hold**, as Kubernetes' ``sigs.k8s.io/yaml`` (YAML -> JSON) and Go's
  ``encoding/json`` refuse them: tags other than the JSON ones (``!!binary``, ``!!set``,
  ``!!timestamp``, ``!!python/...``, custom ``!tags``), NaN and infinities (``.nan``, ``.inf``,
  ``1e400``), numbers out of float64 range (an integer of 10,000 digits; integers beyond 64 bits
  become floats, as Go and orjson read them), lone UTF-16 surrogates (``"\\ud800"``), mapping
  keys that are null, numbers with a fraction or collections (integer and boolean keys become
  strings, as in ``sigs.k8s.io/yaml``), more documents than ``Limits.max_documents``.

Implicit YAML types are YAML 1.1's as PyYAML's safe loader resolves them, except that
timestamp-looking scalars and ``=`` stay strings (as in Kubernetes); ``go_yaml=True`` also reads
``y``/``Y``/``n``/``N`` as booleans, as go-yaml v2 does (catalogs, as opm reads them).

This module is in ``resolver`` (the lowest layer) so that ``provisioners`` and ``pivoter`` use it
too; ``tests/unit/test_safedata_everywhere.py`` fails if any other module calls a YAML/JSON loader.
Modules: :mod:`.limits` (limits, the error), :mod:`.budget` (memory across texts),
:mod:`.json_text`, :mod:`.yaml_text`.
"""

from __future__ import annotations

from typing import Any

from resolver.safedata.budget import (
    BudgetExceeded,
    MemoryBudget,
    current_budget,
    spending,
    text_cost,
)
from resolver.safedata.json_text import iter_json_stream, load_json
from resolver.safedata.limits import DEFAULT_LIMITS, MAX_EXPANDED_BYTES, Limits, SafeDataError
from resolver.safedata.yaml_text import iter_yaml_documents, load_yaml, load_yaml_all

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_EXPANDED_BYTES",
    "BudgetExceeded",
    "Limits",
    "MemoryBudget",
    "SafeDataError",
    "current_budget",
    "iter_json_stream",
    "iter_yaml_documents",
    "load_json",
    "load_json_or_yaml",
    "load_yaml",
    "load_yaml_all",
    "spending",
    "text_cost",
]


def load_json_or_yaml(
    data: str | bytes,
    *,
    limits: Limits = DEFAULT_LIMITS,
    where: str = "",
    go_yaml: bool = False,
    budget: MemoryBudget | None = None,
) -> Any:
    """One JSON value, or else one YAML document (``yaml.ToJSON``'s input: JSON is YAML).

    ``budget`` is charged for what YAML aliases add (JSON has none).
    """
    try:
        return load_json(data, limits=limits, where=where)
    except SafeDataError as err:
        if err.limit:
            raise
    return load_yaml(data, limits=limits, where=where, go_yaml=go_yaml, budget=budget)
