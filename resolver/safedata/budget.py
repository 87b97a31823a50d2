"""What parsed data may cost in memory, bounded by what came in (part of :mod:`resolver.safedata`).

A text's limits (:class:`~resolver.safedata.limits.Limits`) bound one call of the loader. Data that
arrives as many texts -- a catalog is many files, each many documents, each with inlined
``olm.bundle.object`` manifests parsed again -- needs one allowance shared by every call that builds
it, or it grows with the number of calls: 40 files of 175,000 tiny JSON objects each pass every
per-text limit and take 4 GB. A :class:`MemoryBudget` is that allowance: its owner sets the limit
(for a catalog file, in proportion to its size on disk), charges the estimated cost of each text
before it is parsed (:func:`text_cost`, at C speed: a refusal comes before the parse, within
seconds), and makes it the budget of every loader call in a block (``with spending(budget):``, or
``budget=`` on one call): the YAML loader charges it for what aliases add while it builds (a copy of
an aliased collection costs memory; an aliased string, shared, costs what it becomes when written
out), however deep in the code the call is (the manifests inlined in a catalog's bundles are parsed
while their bundle is decoded).

The estimate: parsed JSON data costs its characters plus a Python object for each node (a
``str`` 50 bytes and more, a ``dict`` 64 to 232, a catalog object and its origin 300 more); nodes
cannot be counted without parsing, but each needs a structural character in its text. So every
``{`` costs 200 bytes, every ``:`` 112 (a key and its value), every ``[``, ``,`` and newline 48
and every ``-`` 32, plus the text's length. Measured (tracemalloc, 2026-11-28) on 24 shapes of
small objects (tiny JSON/YAML objects, lists of short strings, one-key maps, nested block maps,
flow maps, empty collections, catalog objects of each schema): what they really take is at most
1.3 times the estimate (tiny objects of 15 bytes each: estimated at 24.5 times their size, 26.7
taken). Structure inside strings (``alm-examples`` JSON in a CSV annotation) is counted too, so
real catalogs are overestimated: 1.1 to 5.8 times their size (10.8 for the densest file), where
they really take 1.1 to 2.7 times it.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from resolver.safedata.limits import SafeDataError

__all__ = [
    "ALIAS_NODE_COST",
    "BudgetExceeded",
    "MemoryBudget",
    "current_budget",
    "spending",
    "text_cost",
]

ALIAS_NODE_COST = 64
"""What each node an alias copies is charged (besides the bytes it becomes)."""

_WEIGHTS = {ord("{"): 200, ord(":"): 112, ord("["): 48, ord(","): 48, ord("\n"): 48, ord("-"): 32}
_OTHERS = bytes(c for c in range(256) if c not in _WEIGHTS)
_CHUNK = 1 << 20
"""Bytes estimated at a time: the copy of the structural characters stays small."""


def text_cost(data: str | bytes) -> int:
    """Estimate what parsing ``data`` (YAML or JSON) costs in memory, in bytes (see above; the
    length counted is in bytes of UTF-8, as on disk, whether ``data`` is ``bytes`` or ``str``).

    Costs about a millisecond per MiB (one C pass per MiB keeping only the structural characters,
    then counts on that copy).
    """
    total = 0
    for start in range(0, len(data), _CHUNK):
        piece = data[start : start + _CHUNK]
        raw = piece if isinstance(piece, bytes) else piece.encode("utf-8", "surrogatepass")
        kept = raw.translate(None, _OTHERS)
        total += len(raw) + 48 * len(kept)
        total += (200 - 48) * kept.count(b"{") + (112 - 48) * kept.count(b":")
        total -= (48 - 32) * kept.count(b"-")
    return total


class BudgetExceeded(SafeDataError):
    """A :class:`MemoryBudget` was overspent (a limit was hit: ``limit`` is true)."""


class MemoryBudget:
    """An allowance of memory, in bytes, shared by every loader call that builds one piece of data.

    ``what`` names it in the refusal (e.g. ``"the memory budget of this catalog file (16 times its
    2.0 MiB on disk plus 16 KiB)"``); :meth:`charge` raises :class:`BudgetExceeded` once more has
    been spent than ``limit``. Not thread-safe: one budget per thread or process.
    """

    __slots__ = ("limit", "spent", "what")

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.spent = 0
        self.what = what

    def charge(self, cost: int, reason: str, *, where: str = "", line: int = 0) -> None:
        """Spend ``cost``; past the limit, raise BudgetExceeded saying ``reason`` (what was being
        paid for) and the budget it went past."""
        self.spent += cost
        if self.spent > self.limit:
            message = f"{reason}, more than {self.what} allows ({_mib(self.limit)})"
            raise BudgetExceeded(message, line, where, limit=True)

    @property
    def spent_out(self) -> bool:
        """Whether more has been charged than the limit (what follows would be refused too)."""
        return self.spent > self.limit

    def grow(self, amount: int) -> None:
        """Raise the limit by ``amount`` (for data that arrives piece by piece, e.g. a stream
        whose allowance is in proportion to the bytes received so far)."""
        self.limit += amount


_CURRENT: contextvars.ContextVar[MemoryBudget | None] = contextvars.ContextVar(
    "safedata_budget", default=None
)


@contextlib.contextmanager
def spending(budget: MemoryBudget | None) -> Iterator[MemoryBudget | None]:
    """Make ``budget`` the budget of every loader call in the block (in this thread or task) that
    is not given one; None leaves calls unbudgeted (their per-text limits still hold)."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


def current_budget() -> MemoryBudget | None:
    """The budget set by the innermost :func:`spending` block around this call, if any."""
    return _CURRENT.get()


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"
