"""Where the benchmarks find the full catalogs of ``../shared``, and the one line they exit with
when it is absent.

The benchmarks measure the full sets (tens of MB of real catalogs), which are not in the
repository: ``../shared`` sits beside the checkout here and in CI, not in a plain clone. As for
the tests (``tests/tools.py``), ``PIVOTER_SHARED`` points elsewhere; a benchmark given its inputs
on the command line needs none of it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("PIVOTER_SHARED") or Path(__file__).resolve().parents[2] / "shared")
CATALOGS = SHARED / "catalogs"


def need(*paths: Path) -> None:
    """Exit (status 1) with one line if any of ``paths`` is absent, naming the first of them."""
    for path in paths:
        if not path.exists():
            sys.exit(
                f"{Path(sys.argv[0]).name}: {path} is absent: this benchmark measures the full "
                f"catalogs of ../shared beside the checkout (CI has them, a plain clone does not; "
                f"PIVOTER_SHARED points elsewhere)"
            )
