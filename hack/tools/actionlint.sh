#!/usr/bin/env bash
# Installs actionlint, the checker of the GitHub Actions workflows in .github/workflows/ (run by
# tests/packaging/test_workflows.py). It runs shellcheck on `run:` scripts when shellcheck is on
# PATH (it is not installed here: the hack/ scripts are not shellcheck-gated either).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/rhysd/actionlint
VERSION=v1.7.12
# actionlint reports its own version from this variable, as its release builds set it.
LDFLAGS="-s -w -X $MODULE.version=$VERSION"

# As for opm (hack/tools/opm.sh): if the proxy refuses `go install`'s version listing, build the
# same version inside its downloaded module, with the module's own go.sum.
build_from_module_cache() {
  local dir
  need_go
  dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
  log "building actionlint in $dir"
  (cd "$dir" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -ldflags "$LDFLAGS" \
    -o "$PIVOTER_TOOLS_DIR/actionlint" ./cmd/actionlint) ||
    die "building actionlint from $MODULE@$VERSION failed"
  echo "$MODULE/cmd/actionlint@$VERSION" >"$PIVOTER_TOOLS_DIR/.actionlint.version"
}

(CGO_ENABLED=0 go_install_tool actionlint "$MODULE/cmd/actionlint@$VERSION" -ldflags "$LDFLAGS") ||
  build_from_module_cache
"$PIVOTER_TOOLS_DIR/actionlint" -version >/dev/null || die "actionlint does not run"
