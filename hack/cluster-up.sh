#!/usr/bin/env bash
# Starts a local Kubernetes control plane on loopback (free ports) and prints the path of its admin
# kubeconfig on stdout. Data, logs and certificates live in $PIVOTER_CLUSTER_DIR (default
# ~/.cache/pivoter/cluster); hack/cluster-down.sh stops it and removes them.
# Usage: hack/cluster-up.sh [--port N] [--no-kwok] [--watch-cache] [--compaction-interval 1m]
# Example: export KUBECONFIG=$(hack/cluster-up.sh) && kubectl get nodes
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

hack/tools.sh kube >&2
python=python3
[[ -x .venv/bin/python ]] && python=.venv/bin/python
PYTHONPATH="$PWD/hack/cluster${PYTHONPATH:+:$PYTHONPATH}" exec "$python" -m localcluster up "$@"
