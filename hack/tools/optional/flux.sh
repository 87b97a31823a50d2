#!/usr/bin/env bash
# Optional (not in `hack/tools.sh`'s default set; install with `hack/tools.sh optional/flux`):
# only bench/install_peers.py uses it, and the module proxy does not serve helm-controller.
#
# Builds Flux's source-controller and helm-controller, the peer of issue 32's install benchmark
# (bench/install_peers.py, variant `flux`): run out of the cluster against the local control
# plane, they install the same workload from a Helm chart in an OCI registry. Into
# $PIVOTER_TOOLS_DIR/flux/: both binaries and their CRDs (crds/).
#
# - source-controller: from the module proxy (github.com/fluxcd/source-controller and its api
#   module, served), built inside a copy of the module with its `./api` replace pointed at the
#   downloaded api module (a module zip leaves out nested modules).
# - helm-controller: the proxy refuses github.com/fluxcd/helm-controller (no version is listed or
#   served), so it is built from a source tree of the tag, given as $FLUX_HELM_CONTROLLER_SRC
#   (e.g. `git clone --branch v1.6.2 https://github.com/fluxcd/helm-controller`). v1.6.2 is
#   pinned: every dependency of it is served; v1.6.3 replaces helm.sh/helm/v4 with Flux's fork
#   github.com/fluxcd/helm/v4, which the proxy refuses.
#
# Measured on the reference machine (2 cores): source-controller 7 min 13 s cold, helm-controller
# 2 min 2 s with the Go build cache the first left.
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

SOURCE_MODULE=github.com/fluxcd/source-controller
SOURCE_VERSION=v1.9.1
HELM_VERSION=v1.6.2
OUT="$PIVOTER_TOOLS_DIR/flux"
STAMP="$OUT/.version"
WANT="source-controller@$SOURCE_VERSION helm-controller@$HELM_VERSION"

if [[ -x $OUT/source-controller && -x $OUT/helm-controller && -f $STAMP &&
  "$(cat "$STAMP")" == "$WANT" ]]; then
  exit 0
fi

need_go
src=${FLUX_HELM_CONTROLLER_SRC:-}
[[ -n $src && -f $src/go.mod ]] ||
  die "set FLUX_HELM_CONTROLLER_SRC to a source tree of github.com/fluxcd/helm-controller at $HELM_VERSION (the module proxy does not serve it)"
grep -q '^module github.com/fluxcd/helm-controller/v2$\|^module github.com/fluxcd/helm-controller$' "$src/go.mod" ||
  die "$src is not github.com/fluxcd/helm-controller"
if grep -q 'fluxcd/helm/v4' "$src/go.mod"; then
  die "$src replaces Helm with Flux's fork, which the module proxy refuses: use $HELM_VERSION"
fi

module_dir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }

start=$(date +%s)
work=$(mktemp -d "$PIVOTER_TOOLS_DIR/.flux-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/crds"

log "building Flux source-controller $SOURCE_VERSION (first time only)"
dir=$(module_dir "$SOURCE_MODULE@$SOURCE_VERSION")
api=$(module_dir "$SOURCE_MODULE/api@$SOURCE_VERSION")
[[ -d $dir && -d $api ]] || die "go mod download $SOURCE_MODULE@$SOURCE_VERSION (and /api) failed"
cp -r "$dir" "$work/source-controller"
chmod -R u+w "$work/source-controller"
(cd "$work/source-controller" && go mod edit -replace "$SOURCE_MODULE/api=$api" &&
  GOFLAGS="-p=2 -mod=mod -buildvcs=false" go build -o "$work/bin/source-controller" .) ||
  die "building source-controller failed; see the compiler output above"
cp "$dir"/config/crd/bases/*.yaml "$work/crds/"

log "building Flux helm-controller from $src"
(cd "$src" && GOFLAGS="-p=2 -mod=readonly -buildvcs=false" go build -o "$work/bin/helm-controller" .) ||
  die "building helm-controller failed; see the compiler output above"
cp "$src"/config/crd/bases/*.yaml "$work/crds/"

"$work/bin/source-controller" --help >/dev/null 2>&1 || die "the built source-controller does not run"
"$work/bin/helm-controller" --help >/dev/null 2>&1 || die "the built helm-controller does not run"
chmod -R u+w "$work/crds"
rm -rf "$OUT"
mkdir -p "$OUT"
mv "$work/bin/source-controller" "$work/bin/helm-controller" "$work/crds" "$OUT/"
echo "$WANT" >"$STAMP"
log "Flux's controllers built in $(($(date +%s) - start)) s"
