#!/usr/bin/env bash
# Builds OLM v0's two controllers, `olm` (olm-operator: CSVs, OperatorGroups) and `catalog`
# (catalog-operator: CatalogSources, Subscriptions, InstallPlans), from the pinned
# operator-lifecycle-manager module into $PIVOTER_TOOLS_DIR. They are the referee of the
# registry+v1 differential and the peer of `pivoter adopt` (tests/olmv0/, docs/control-plane.md);
# the tests run them on the host against the local control plane. Only these two binaries are
# built (not the packageserver, not the registry images).
#
# Built inside the downloaded module with its own go.mod/go.sum, as hack/tools/opm.sh does:
# the module proxy refuses the version listing `go install` asks for, and the same
# operator-registry and Kubernetes module versions as opm's let the Go build cache share their
# packages. Cold and warm build times: docs/control-plane.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/operator-framework/operator-lifecycle-manager
VERSION=v0.46.0
stamp="$PIVOTER_TOOLS_DIR/.olm.version"

if [[ -x "$PIVOTER_TOOLS_DIR/olm" && -x "$PIVOTER_TOOLS_DIR/catalog" && -f $stamp &&
  "$(cat "$stamp")" == "$MODULE@$VERSION" ]]; then
  exit 0
fi

need_go
dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
log "building OLM v0 (olm, catalog) $VERSION into $PIVOTER_TOOLS_DIR (first time only)"
start=$(date +%s)
out=$(mktemp -d "$PIVOTER_TOOLS_DIR/.olm-build.XXXXXX")
trap 'rm -rf "$out"' EXIT
ldflags="-s -w -X $MODULE/pkg/version.OLMVersion=$VERSION"
# -p=2: the build machines have two cores and are shared.
if ! (cd "$dir" && GOFLAGS="-p=2 -mod=readonly -buildvcs=false" \
  go build -ldflags="$ldflags" -o "$out/" ./cmd/olm ./cmd/catalog); then
  die "building OLM v0 from $MODULE@$VERSION failed; see the compiler output above"
fi
"$out/olm" --version >/dev/null 2>&1 || die "the built olm does not run"
# OLM's CRDs (Subscription, InstallPlan, CatalogSource, CSV, OperatorGroup, ...) of the same
# version, installed by the test fixture (tests/olmv0/peer.py).
rm -rf "$PIVOTER_TOOLS_DIR/olm-crds"
mkdir -p "$out/olm-crds"
cp "$dir"/deploy/chart/crds/*.yaml "$out/olm-crds/"
chmod -R u+w "$out/olm-crds"
mv -f "$out/olm" "$out/catalog" "$out/olm-crds" "$PIVOTER_TOOLS_DIR/"
echo "$MODULE@$VERSION" >"$stamp"
log "OLM v0 built in $(($(date +%s) - start)) s"
