#!/usr/bin/env bash
# Builds the helm binary for the image as the Dockerfile's helm-build stage does (static, stripped,
# its version stamped), but with the host's Go and module cache, so that no Go image is needed:
# podman build --build-context helm="$(hack/image/helm.sh)" ...   Prints the directory holding
# `helm`; built once per version (the module and the compiled packages are shared with
# hack/tools/helm.sh's build, so this is mostly a link).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

version=$(sed -n 's/^VERSION=//p' hack/tools/helm.sh)
[[ -n $version ]] || die "no VERSION= in hack/tools/helm.sh"
module=helm.sh/helm/v3
out="$PIVOTER_CACHE/image/helm-$version"
if [[ -x $out/helm ]]; then
  echo "$out"
  exit 0
fi
need_go
dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $dir && -d $dir ]] || die "go mod download $module@$version failed"
mkdir -p "$out"
log "building helm $version for the image into $out"
(cd "$dir" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -o "$out/helm.tmp" \
  -ldflags "-s -w -X $module/internal/version.version=$version" ./cmd/helm) ||
  die "building helm $version failed"
mv -f "$out/helm.tmp" "$out/helm"
echo "$out"
