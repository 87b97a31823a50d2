#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then formatting, lint, types,
# the import-layering contract and pytest. Extra arguments go to pytest (e.g. -k resolver).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/bootstrap.sh
hack/tools.sh
# shellcheck disable=SC1091
source .venv/bin/activate
# Let Python keep compiled modules (some machines set PYTHONDONTWRITEBYTECODE): otherwise every
# process compiles what it imports again, and pytest rewrites every test module's asserts anew
# (about 5 s of each test process's start).
unset PYTHONDONTWRITEBYTECODE

echo "== ruff format" >&2
ruff format --check .
echo "== ruff check" >&2
ruff check .
echo "== mypy" >&2
mypy pivoter resolver provisioners
echo "== import layering" >&2
lint-imports
echo "== pytest" >&2
# Two workers (pytest-xdist), each with its own control plane: most cluster tests wait on the API
# server, so two overlap their waits on two cores. A module's tests stay in one worker (its
# fixtures are made once), and so do tests that share something of the machine's own
# (tests/xdist_groups.py). PIVOTER_TEST_WORKERS=0 runs them in this process.
pytest -n "${PIVOTER_TEST_WORKERS:-2}" --dist loadscope --durations=25 "$@"
