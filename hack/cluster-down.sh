#!/usr/bin/env bash
# Stops the control plane started by hack/cluster-up.sh and removes its directory (data, logs,
# certificates). Safe to run when nothing runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
PYTHONPATH="$PWD/hack/cluster${PYTHONPATH:+:$PYTHONPATH}" exec "$python" -m localcluster down "$@"
