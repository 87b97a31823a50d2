#!/usr/bin/env bash
# Builds the pod sandbox image of the test node (hack/image/pause/) into podman's project storage
# as localhost/pivoter-pause:1 and prints that name: a static binary in an otherwise empty image.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
# shellcheck source=hack/lib.sh
source hack/lib.sh

tag=localhost/pivoter-pause:1
if hack/image/podman.sh image exists "$tag"; then
  echo "$tag"
  exit 0
fi
need_go
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd hack/image/pause && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$work/pause" .) ||
  die "building pause failed"
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$work/Containerfile"
hack/image/podman.sh build --quiet --tag "$tag" "$work" >/dev/null || die "podman build of $tag failed"
echo "$tag"
