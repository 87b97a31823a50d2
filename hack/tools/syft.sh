#!/usr/bin/env bash
# Installs syft (Anchore's SBOM generator), which hack/release.sh runs on the image to write its
# CycloneDX SBOM (every Debian package, Python distribution and Go binary in it). Not in the
# default set of hack/tools.sh: only releases need it (hack/release.sh installs it on first use).
# First build: about 4 minutes on 2 cores with an empty module cache (docs/releasing.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/anchore/syft
VERSION=v1.57.1
# syft reports its own version from this variable (its release builds set it the same way).
LDFLAGS="-s -w -X main.version=${VERSION#v}"

# As for opm (hack/tools/opm.sh): if the proxy refuses `go install`'s version listing, build the
# same version inside its downloaded module, with the module's own go.sum.
build_from_module_cache() {
  local dir
  need_go
  dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
  log "building syft in $dir"
  (cd "$dir" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -ldflags "$LDFLAGS" \
    -o "$PIVOTER_TOOLS_DIR/syft" ./cmd/syft) || die "building syft from $MODULE@$VERSION failed"
  echo "$MODULE/cmd/syft@$VERSION" >"$PIVOTER_TOOLS_DIR/.syft.version"
}

(CGO_ENABLED=0 go_install_tool syft "$MODULE/cmd/syft@$VERSION" -ldflags "$LDFLAGS") ||
  build_from_module_cache
"$PIVOTER_TOOLS_DIR/syft" version >/dev/null || die "syft does not run"
