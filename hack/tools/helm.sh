#!/usr/bin/env bash
# Installs helm v3.21.4, the template engine of the helm bundle format (provisioners/formats/helm):
# pivoter renders charts with `helm template` and applies the objects itself (no releases).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=helm.sh/helm/v3
VERSION=v3.21.4

# As for opm (hack/tools/opm.sh): if the proxy refuses `go install`'s version listing, build the
# same version inside its downloaded module, with the module's own go.sum.
build_from_module_cache() {
  local dir
  need_go
  dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
  log "building helm in $dir"
  (cd "$dir" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -o "$PIVOTER_TOOLS_DIR/helm" ./cmd/helm) ||
    die "building helm from $MODULE@$VERSION failed"
  echo "$MODULE/cmd/helm@$VERSION" >"$PIVOTER_TOOLS_DIR/.helm.version"
}

(CGO_ENABLED=0 go_install_tool helm "$MODULE/cmd/helm@$VERSION") || build_from_module_cache
"$PIVOTER_TOOLS_DIR/helm" version --short >/dev/null || die "helm does not run"
