#!/usr/bin/env bash
# Builds the local control plane: ONE multi-call binary "kube" (embedded etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, kwok) from the wrapper module in hack/cluster,
# into $PIVOTER_TOOLS_DIR, plus a "kubectl" symlink to it. Rebuilds only when the module (pinned
# versions in go.mod/go.sum, or its Go source) changes. Cold build: see docs/control-plane.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

module_dir=hack/cluster
binary="$PIVOTER_TOOLS_DIR/kube"
stamp="$PIVOTER_TOOLS_DIR/.kube.version"
version=$(cat "$module_dir"/go.mod "$module_dir"/go.sum "$module_dir"/*.go | sha256sum | cut -c1-16)

link_kubectl() {
  local link="$PIVOTER_TOOLS_DIR/kubectl"
  if [[ ! -e $link || -L $link ]]; then
    ln -sfn kube "$link"
  fi
}

if [[ -x $binary && -f $stamp && "$(cat "$stamp")" == "$version" ]]; then
  link_kubectl
  exit 0
fi

need_go
k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$module_dir/go.mod")
[[ -n $k8s_version ]] || die "no k8s.io/kubernetes requirement in $module_dir/go.mod"
minor=$(cut -d. -f2 <<<"$k8s_version")
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=$k8s_version -X $v.gitMajor=1 -X $v.gitMinor=$minor -X $v.gitTreeState=clean"

log "building the control plane ($k8s_version) into $binary; the first build takes long (docs/control-plane.md)"
start=$(date +%s)
tmp="$binary.tmp.$$"
trap 'rm -f "$tmp"' EXIT
# -p=2: the build machines have two cores and are shared; CGO off: no C toolchain needed.
if ! (cd "$module_dir" && GOFLAGS="-p=2 -mod=readonly" CGO_ENABLED=0 \
  go build -trimpath -ldflags="$ldflags" -o "$tmp" .); then
  die "building the control plane failed (go build in $module_dir); see the compiler output above"
fi
"$tmp" kubectl version --client >/dev/null 2>&1 || die "the built binary does not run: $tmp"
mv -f "$tmp" "$binary"
echo "$version" >"$stamp"
link_kubectl
log "control plane built in $(($(date +%s) - start)) s"
