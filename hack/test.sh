#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, then formatting, lint, types,
# the import-layering contract and pytest. Extra arguments go to pytest (e.g. -k resolver).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/bootstrap.sh
hack/tools.sh
# shellcheck disable=SC1091
source .venv/bin/activate

echo "== ruff format" >&2
ruff format --check .
echo "== ruff check" >&2
ruff check .
echo "== mypy" >&2
mypy pivoter resolver provisioners
echo "== import layering" >&2
lint-imports
echo "== pytest" >&2
pytest "$@"
