#!/usr/bin/env bash
# The main job: installs what it needs, then shows the best of pivoter that exists today.
set -euo pipefail
cd "$(dirname "$0")/.."

hack/bootstrap.sh
hack/tools.sh
# shellcheck disable=SC1091
source .venv/bin/activate

pivoter --version
pivoter --help
