#!/usr/bin/env bash
# Installs cosign (Sigstore's signing tool), which tests/verification/test_cosign_interop.py runs
# to sign images in the local registry with keys and certificates made in the test, so that the
# verification of provisioners/verification is shown against what the real tool writes (the
# .sig tag with simple signing, the OCI 1.1 referrer with a Sigstore bundle). Built without cgo:
# the PIV and PKCS#11 key backends (build tags pivkey, pkcs11key) are not needed.
# First build: about 3 minutes (192 s) on 2 cores with empty module and build caches.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/sigstore/cosign/v3
VERSION=v3.1.3
# cosign reports its version from sigs.k8s.io/release-utils (its Makefile sets it this way).
LDFLAGS="-s -w -buildid= -X sigs.k8s.io/release-utils/version.gitVersion=$VERSION"

# As for opm (hack/tools/opm.sh): if the proxy refuses `go install`'s version listing, build the
# same version inside its downloaded module, with the module's own go.sum.
build_from_module_cache() {
  local dir
  need_go
  dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
  log "building cosign in $dir"
  (cd "$dir" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" \
    -o "$PIVOTER_TOOLS_DIR/cosign" ./cmd/cosign) || die "building cosign from $MODULE@$VERSION failed"
  echo "$MODULE/cmd/cosign@$VERSION" >"$PIVOTER_TOOLS_DIR/.cosign.version"
}

(CGO_ENABLED=0 go_install_tool cosign "$MODULE/cmd/cosign@$VERSION" -trimpath -ldflags "$LDFLAGS") ||
  build_from_module_cache
"$PIVOTER_TOOLS_DIR/cosign" version >/dev/null 2>&1 || die "cosign does not run"
