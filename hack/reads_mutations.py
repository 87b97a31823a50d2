"""Check that the property tests of ``tests/resolver/test_reads.py`` catch a missing read note.

Run: ``python hack/reads_mutations.py [--examples 150,400]``. For each note the resolver's
``Index`` takes (the packages whose candidates it handed out, the APIs whose providers it
listed, the held bundles it looked up by name), it runs both property tests with that note
removed and prints whether each failed. A note whose removal fails neither test is not covered:
raise ``EXAMPLES`` in the test module or aim its generator better. Used to choose
``EXAMPLES``; the tests themselves never patch the index.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tests.resolver.test_reads as reads_tests
from resolver.rules.inputs import Index

TESTS: list[Callable[[], None]] = [
    reads_tests.test_a_change_that_touches_nothing_read_never_changes_the_answer,
    reads_tests.test_a_change_of_a_bundle_another_input_holds_is_seen_when_it_matters,
]


@contextmanager
def unnoted(method: str) -> Iterator[None]:
    """``Index.<method>`` with its note removed (it runs as if no ``Reads`` were attached)."""
    original = getattr(Index, method)

    def quiet(self: Index, *args: Any) -> Any:
        saved, self.reads = self.reads, None
        try:
            return original(self, *args)
        finally:
            self.reads = saved

    setattr(Index, method, quiet)
    try:
        yield
    finally:
        setattr(Index, method, original)


def outcome(test: Callable[[], None]) -> str:
    """``pass`` or ``FAIL``, with the time it took."""
    start = time.monotonic()
    try:
        test()
        result = "pass"
    except AssertionError:
        result = "FAIL"
    return f"{result} ({time.monotonic() - start:.1f} s)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", default=str(reads_tests.EXAMPLES))
    args = parser.parse_args(argv)
    uncovered = 0
    for examples in (int(n) for n in args.examples.split(",")):
        reads_tests.EXAMPLES = examples
        print(f"examples {examples}: intact: {', '.join(outcome(t) for t in TESTS)}")
        for method in ("candidates", "providers", "named"):
            with unnoted(method):
                results = [outcome(t) for t in TESTS]
            caught = any(r.startswith("FAIL") for r in results)
            uncovered += not caught
            flag = "" if caught else "  <- not caught"
            print(f"  without the {method} note: {', '.join(results)}{flag}")
    return 1 if uncovered else 0


if __name__ == "__main__":
    sys.exit(main())
