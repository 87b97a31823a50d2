#!/usr/bin/env bash
# Installs the external tools the tests and the demo use (Go-built binaries, Debian packages),
# idempotently: each hack/tools/<name>.sh installs one tool into $PIVOTER_TOOLS_DIR and returns
# at once when it is already there at the pinned version.
# Usage: hack/tools.sh [NAME ...]   (default: every tool)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

if [[ $# -eq 0 ]]; then
  set -- $(ls hack/tools/*.sh 2>/dev/null | xargs -r -n1 basename | sed 's/\.sh$//')
fi
for name in "$@"; do
  script=hack/tools/$name.sh
  [[ -f $script ]] || die "no such tool: $name (see hack/tools/)"
  start=$(date +%s)
  bash "$script"
  log "tool $name ready ($(($(date +%s) - start)) s)"
done
