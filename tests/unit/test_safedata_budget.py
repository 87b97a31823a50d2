"""resolver.safedata: what a text may become (alias amplification by size, not only by count) and
what texts parsed for one purpose may cost together (:class:`resolver.safedata.MemoryBudget`)."""

from __future__ import annotations

import gc
import time
import tracemalloc
from typing import Any

import pytest

from resolver import safedata
from resolver.safedata import (
    MAX_EXPANDED_BYTES,
    BudgetExceeded,
    Limits,
    MemoryBudget,
    SafeDataError,
    text_cost,
)

BIG = "a" * (1 << 20)
N = 5000


def _aliases(alias: str = "*b", count: int = N) -> str:
    return "[" + ", ".join([alias] * count) + "]"


# name -> a YAML text of a few megabytes at most that becomes gigabytes through aliases, each in
# another form of the same class (few nodes, many bytes).
SHAPES: dict[str, str] = {
    "scalar": f"big: &b {BIG}\nl: {_aliases()}\n",
    "collection": f"big: &b [{BIG}]\nl: {_aliases()}\n",
    "nested-collections": f"big: &b {{k: [{BIG}, {BIG}]}}\nl: {_aliases()}\n",
    "merge": f"big: &b {{k: {BIG}}}\nl: [" + ", ".join(["{<<: *b}"] * N) + "]\n",
    "merge-list": f"m: &b {{k: {BIG}}}\nl: [" + ", ".join(["{<<: [*b]}"] * N) + "]\n",
    "key": f"big: &b {BIG}\nl: [" + ", ".join(["{*b : 1}"] * N) + "]\n",
    "block": f"big: &b {BIG}\nl:\n" + "- *b\n" * N,
    "documents": "".join(f"---\nbig: &b {'a' * (1 << 16)}\nl: {_aliases(count=400)}\n" * 64),
    "quoted": f'big: &b "{BIG}"\nl: {_aliases()}\n',
}


@pytest.mark.parametrize("text", SHAPES.values(), ids=SHAPES.keys())
def test_aliases_cannot_make_a_text_gigabytes(text: str) -> None:
    started = time.monotonic()
    with pytest.raises(SafeDataError, match=r"expands to more than [\d,]+ bytes") as caught:
        safedata.load_yaml_all(text)
    assert time.monotonic() - started < 2
    assert caught.value.limit
    assert caught.value.line > 0
    assert "\n" not in str(caught.value)
    # Every entry point of the loader has the same limit.
    with pytest.raises(SafeDataError, match="expands to more than"):
        list(safedata.iter_yaml_documents(text))
    if not text.startswith("---"):
        with pytest.raises(SafeDataError, match="expands to more than"):
            safedata.load_yaml(text)
        with pytest.raises(SafeDataError, match="expands to more than"):
            safedata.load_json_or_yaml(text)


def test_nodes_copied_by_aliases_count_across_the_documents_of_a_text() -> None:
    # Each document copies 90,000 empty lists (2 bytes each: within the byte limit, within the
    # node limit per document); ten thousand documents would hold 900 million objects.
    doc = "---\na: &a [" + ",".join(["[]"] * 99) + "]\nb: [" + ",".join(["*a"] * 900) + "]\n"
    limits = Limits(max_nodes=100_000)
    with pytest.raises(SafeDataError, match="text expands to more than 100,000 nodes") as hit:
        safedata.load_yaml_all(doc * 10_000, limits=limits)
    assert hit.value.line == 5  # the second document
    assert len(safedata.load_yaml_all(doc, limits=limits)) == 1


def test_a_text_may_always_become_twice_its_length() -> None:
    # Flow YAML without aliases becomes up to twice its length as JSON (quotes and brackets):
    # never refused, whatever the expansion limit.
    dense = "[" + ",".join("a" for _ in range(50_000)) + "]"
    tight = Limits(max_expanded_bytes=1000)
    assert len(safedata.load_yaml(dense, limits=tight)) == 50_000
    assert safedata.load_yaml(f"x: &x {'b' * 400}\ny: *x\n", limits=tight)["y"] == "b" * 400
    with pytest.raises(SafeDataError, match="expands to more than 1,000 bytes"):
        safedata.load_yaml(f"x: &x {'b' * 400}\ny: [*x, *x, *x]\n", limits=tight)


def test_real_use_of_aliases_is_not_refused() -> None:
    text = (
        "defaults: &d {image: quay.io/x/y:v1, replicas: 2, labels: {app: y, tier: web}}\n"
        "services:\n" + "".join(f"- {{<<: *d, name: s{i}}}\n" for i in range(2000))
    )
    services = safedata.load_yaml(text)["services"]
    assert services[1999] == {**services[0], "name": "s1999"}


@pytest.mark.parametrize("bad", [0, -1, MAX_EXPANDED_BYTES + 1, 1 << 62])
def test_the_expansion_limit_cannot_be_switched_off(bad: int) -> None:
    with pytest.raises(ValueError, match="cannot be switched off"):
        Limits(max_expanded_bytes=bad)
    Limits(max_expanded_bytes=MAX_EXPANDED_BYTES)


def test_json_has_no_aliases_and_no_expansion_limit() -> None:
    text = '{"a": "' + "x" * 5000 + '"}'
    assert safedata.load_json(text, limits=Limits(max_expanded_bytes=100))["a"] == "x" * 5000


def test_a_budget_is_charged_by_aliases_of_every_text_sharing_it() -> None:
    text = f"x: &x {'b' * 1000}\ny: [*x, *x]\n"
    budget = MemoryBudget(10_000, "the test's budget")
    safedata.load_yaml(text, budget=budget)
    assert budget.spent == 2 * (1002 + 64)  # two aliases: the bytes they add and a node each
    safedata.load_yaml("plain: [1, 2, 3]\n", budget=budget)  # what the text holds is not charged
    assert budget.spent == 2 * (1002 + 64)
    with safedata.spending(budget):  # the budget of every call in the block
        for _ in range(3):
            safedata.load_yaml(text)
        with pytest.raises(SafeDataError, match="more than the test's budget allows") as hit:
            safedata.load_json_or_yaml(text)
    assert hit.value.limit
    assert "alias bomb" in str(hit.value)
    assert hit.value.line == 1
    assert safedata.current_budget() is None
    assert budget.spent_out
    safedata.load_yaml(text)  # outside the block: per-text limits only


def test_a_budget_refuses_in_one_line() -> None:
    budget = MemoryBudget(100, "the budget of x (16 times its size)")
    budget.charge(60, "first")
    with pytest.raises(BudgetExceeded) as caught:
        budget.charge(60, "its objects would take about 120 bytes")
    assert isinstance(caught.value, SafeDataError)
    assert caught.value.limit
    assert str(caught.value) == (
        "its objects would take about 120 bytes, more than the budget of x (16 times its size) "
        "allows (0.0 MiB)"
    )
    budget.grow(1000)
    budget.charge(1, "fine")


def test_text_cost_weights() -> None:
    assert text_cost("") == 0
    assert text_cost("abc") == 3
    assert text_cost("{") == 1 + 200
    assert text_cost(":") == 1 + 112
    assert text_cost("[,\n") == 3 + 3 * 48
    assert text_cost("-") == 1 + 32
    assert text_cost("{:[,\n-") == text_cost(b"{:[,\n-")
    assert text_cost("é" * 10) == text_cost("é".encode() * 10) == 20  # bytes, as on disk
    long = '{"a": [1, 2]}\n' * 200_000  # across the 1 MiB chunks
    assert text_cost(long) == 200_000 * text_cost('{"a": [1, 2]}\n')


def _retained(text: str) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        value: Any = (
            list(safedata.iter_json_stream(text))
            if text.startswith("{")
            else safedata.load_yaml_all(text)
        )
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del value
    return held


@pytest.mark.parametrize(
    "text",
    [
        '{"schema":"x"}\n' * 2000,
        "---\nschema: x\n" * 2000,
        "d:\n" + "- a: 1\n" * 3000,
        "d:\n" + "- a:\n    b:\n      c:\n" * 1000,
        "d: [" + ",".join(f"{i:04x}" for i in range(5000)) + "]\n",
        '{"d": [' + ",".join(f'"{i:04x}"' for i in range(5000)) + "]}",
        "d: [" + ",".join("[]" for _ in range(5000)) + "]\n",
    ],
    ids=["tiny-json", "tiny-yaml", "one-key-maps", "nested-maps", "flow", "strings", "empty"],
)
def test_text_cost_is_close_to_what_parsed_data_takes(text: str) -> None:
    """The estimate is at least about what the parsed values really hold (the 24 shapes measured
    for the docstring of resolver.safedata.budget, catalog objects included, were at most 1.3
    times it)."""
    held, cost = _retained(text), text_cost(text)
    assert held <= 1.3 * cost, held / cost
