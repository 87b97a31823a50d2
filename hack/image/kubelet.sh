#!/usr/bin/env bash
# Builds a real kubelet for the node tests (tests/image/test_real_node.py), from the same
# k8s.io/kubernetes version and replaces as the control plane (hack/cluster/go.mod), in a scratch
# copy of that module so hack/cluster itself is untouched. The control plane's build cache makes
# this mostly a link (about 30 s here). Prints the kubelet's path; built once per module version.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

module_dir=hack/cluster
key=$(cat "$module_dir/go.mod" "$module_dir/go.sum" "$0" | sha256sum | cut -c1-16)
out="$PIVOTER_CACHE/image/kubelet-$key"
if [[ -x $out ]]; then
  echo "$out"
  exit 0
fi
need_go
k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$module_dir/go.mod")
minor=$(cut -d. -f2 <<<"$k8s_version")
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$module_dir/go.mod" "$module_dir/go.sum" "$module_dir"/*.go "$scratch/"
log "building the kubelet ($k8s_version) into $out"
mkdir -p "$(dirname "$out")"
# -mod=mod: the kubelet needs a few modules the control plane does not (go.sum of the copy grows).
(cd "$scratch" && GOFLAGS="-p=2 -mod=mod" CGO_ENABLED=0 \
  go build -trimpath -ldflags="$ldflags" -o "$out.tmp" k8s.io/kubernetes/cmd/kubelet) ||
  die "building the kubelet failed"
mv -f "$out.tmp" "$out"
echo "$out"
