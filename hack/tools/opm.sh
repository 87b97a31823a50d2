#!/usr/bin/env bash
# Installs opm (operator-registry's CLI), the referee for the catalog tests (tests/catalog/): our
# loader, validator and renderer are compared with `opm validate` / `opm render` on the same
# directories. Built without the gpgme cgo dependency (containers_image_openpgp, as upstream's
# Makefile and release builds do). First build: about 4 minutes on 2 cores (downloads included).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/operator-framework/operator-registry
VERSION=v1.73.0
TAGS=containers_image_openpgp

# `go install pkg@version` also asks the module proxy for the module's version list (to warn about
# deprecations); a proxy that refuses that listing makes `go install` fail. Building the very same
# module version inside its downloaded copy needs no listing and uses the module's own go.sum.
build_from_module_cache() {
  local dir stamp="$PIVOTER_TOOLS_DIR/.opm.version"
  need_go
  dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
  log "building opm in $dir"
  (cd "$dir" && GOFLAGS=-buildvcs=false go build -tags "$TAGS" -o "$PIVOTER_TOOLS_DIR/opm" ./cmd/opm) ||
    die "building opm from $MODULE@$VERSION failed"
  echo "$MODULE/cmd/opm@$VERSION" >"$stamp"
}

(go_install_tool opm "$MODULE/cmd/opm@$VERSION" -tags "$TAGS") || build_from_module_cache
"$PIVOTER_TOOLS_DIR/opm" version >/dev/null || die "opm does not run"
