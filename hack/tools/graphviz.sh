#!/usr/bin/env bash
# Installs graphviz's `dot` (Debian's graphviz package): `pivoter catalog graph` renders SVG and PNG
# with it, and the graph legibility tests read its layout (`dot -Tjson`). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

apt_install graphviz
command -v dot >/dev/null 2>&1 || die "graphviz is installed but 'dot' is not on PATH"
