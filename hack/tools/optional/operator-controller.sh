#!/usr/bin/env bash
# Optional (not in `hack/tools.sh`'s default set; install with
# `hack/tools.sh optional/operator-controller`): CI's module proxy refuses one of its dependencies
# (below), so CI cannot build it.
#
# Installs operator-controller (OLM v1), the referee of tests/olmv1/test_operator_controller_cluster.py:
# run out of the cluster against the local control plane, it handles the same ClusterExtensions
# as pivoter, whose catalogd API it reads. Built from its module at the pinned version, without the
# gpgme cgo dependency (containers_image_openpgp, as upstream's Makefile builds it).
#
# Like opm, it is built inside the downloaded module (`go install pkg@version` asks the proxy for
# the module's version list, which some proxies refuse). One dependency,
# pkg.package-operator.run/boxcutter, lives on a vanity domain: when neither the proxy nor that
# domain serves it, the module is taken from $OPERATOR_CONTROLLER_BOXCUTTER_DIR (a checkout of
# github.com/package-operator/boxcutter at the version operator-controller's go.mod names) or
# cloned from GitHub.
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

MODULE=github.com/operator-framework/operator-controller
VERSION=v1.11.0
TAGS=containers_image_openpgp
BOXCUTTER=pkg.package-operator.run/boxcutter
BINARY="$PIVOTER_TOOLS_DIR/operator-controller"
STAMP="$PIVOTER_TOOLS_DIR/.operator-controller.version"

if [[ -x $BINARY && -f $STAMP && "$(cat "$STAMP")" == "$MODULE@$VERSION" ]]; then
  exit 0
fi
need_go
dir=$(go mod download -json "$MODULE@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -d $dir ]] || die "go mod download $MODULE@$VERSION failed"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
boxcutter_version=$(go list -m -f '{{.Version}}' "$BOXCUTTER" 2>/dev/null || true)
if ! go mod download "$BOXCUTTER" >/dev/null 2>&1; then
  source_dir=${OPERATOR_CONTROLLER_BOXCUTTER_DIR:-}
  if [[ -z $source_dir ]]; then
    source_dir="$work/boxcutter"
    git clone -q --depth 1 --branch "${boxcutter_version:-main}" \
      https://github.com/package-operator/boxcutter "$source_dir" ||
      die "$BOXCUTTER ${boxcutter_version:-?} is neither on the module proxy nor on GitHub: set OPERATOR_CONTROLLER_BOXCUTTER_DIR to a checkout of it"
  fi
  log "using $BOXCUTTER from $source_dir"
  go mod edit -replace "$BOXCUTTER=$source_dir"
fi
log "building operator-controller $VERSION"
start=$(date +%s)
CGO_ENABLED=0 GOFLAGS="-buildvcs=false -mod=mod" go build -tags "$TAGS" -o "$BINARY" ./cmd/operator-controller ||
  die "building operator-controller from $MODULE@$VERSION failed"
echo "$MODULE@$VERSION" >"$STAMP"
log "operator-controller built in $(($(date +%s) - start)) s"
