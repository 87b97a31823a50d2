"""``python -m resolver.conformance [FILE...]``: run conformance cases, exit 1 when any fails."""

from __future__ import annotations

import sys

from resolver.conformance.runner import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
