#!/usr/bin/env bash
# The main job: installs what it needs, starts a local control plane with a simulated node and the
# pivoter daemon, then installs a rukpak-style BundleDeployment, pivots it to a new version, shows
# the admission webhook and the catalog tools, and cleans everything up.
# Usage: hack/demo.sh [--keep]   (--keep: leave the cluster and daemon running at the end)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

keep=false
[[ ${1:-} == --keep ]] && keep=true

hack/bootstrap.sh
hack/tools.sh kube
# shellcheck disable=SC1091
source .venv/bin/activate
export PATH="$PIVOTER_TOOLS_DIR:$PATH"

demo_dir=${PIVOTER_DEMO_DIR:-$HOME/.cache/pivoter/demo}
export PIVOTER_CLUSTER_DIR=$demo_dir/cluster
daemon_pid=""
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  hack/cluster-down.sh >/dev/null 2>&1 || true
}
if ! $keep; then trap cleanup EXIT; fi
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
free_port() { python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

step "1. A local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok node)"
hack/cluster-down.sh >/dev/null 2>&1 || true
start=$(date +%s)
KUBECONFIG=$(hack/cluster-up.sh)
export KUBECONFIG
echo "started in $(($(date +%s) - start)) s; KUBECONFIG=$KUBECONFIG"
kubectl get nodes

step "2. The CRDs (rukpak's core.rukpak.io, pivoter.io, platform.openshift.io) and pivoter's namespace"
kubectl apply --server-side -f crds/ >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl get crds -o custom-columns=NAME:.metadata.name,GROUP:.spec.group
kubectl create namespace pivoter-system

step "3. pivoter run: controllers, metrics, probes, content server and admission webhook"
metrics=$(free_port) probes=$(free_port) content=$(free_port) webhook=$(free_port)
mkdir -p "$demo_dir"
pivoter run --kubeconfig "$KUBECONFIG" --namespace pivoter-system --leader-elect \
  --leader-election-namespace pivoter-system --store-dir "$demo_dir/store" \
  --metrics-bind-address "127.0.0.1:$metrics" --health-probe-bind-address "127.0.0.1:$probes" \
  --content-bind-address "127.0.0.1:$content" --content-url "http://127.0.0.1:$content" \
  --webhook-bind-address "127.0.0.1:$webhook" --webhook-url "https://127.0.0.1:$webhook" \
  --log-format text >"$demo_dir/pivoter.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$probes/readyz" >/dev/null 2>&1 && break
  kill -0 "$daemon_pid" 2>/dev/null || die "pivoter run exited; see $demo_dir/pivoter.log"
  sleep 0.5
done
echo "/healthz: $(curl -fsS "http://127.0.0.1:$probes/healthz")"
echo "/readyz:  $(curl -fsS "http://127.0.0.1:$probes/readyz")"
echo "/metrics (excerpt):"
curl -fsS "http://127.0.0.1:$metrics/metrics" | grep -E '^pivoter_leader|^workqueue_depth' | head -5
kubectl -n pivoter-system get lease

step "4. A plain bundle in immutable ConfigMaps, installed by a rukpak BundleDeployment"
for v in v1 v2; do
  kubectl -n pivoter-system create configmap "greeter-$v" --from-file="hack/demo/bundle-$v/manifests" \
    --dry-run=client -o json |
    python -c 'import json,sys; o=json.load(sys.stdin); o["immutable"]=True; print(json.dumps(o))' |
    kubectl apply -f - >/dev/null
done
bd() {
  cat <<EOF
apiVersion: core.rukpak.io/v1alpha1
kind: BundleDeployment
metadata:
  name: greeter
spec:
  provisionerClassName: core-rukpak-io-plain
  template:
    spec:
      provisionerClassName: core-rukpak-io-plain
      source:
        type: configMaps
        configMaps:
          - configMap: {name: greeter-$1}
            path: manifests
EOF
}
bd v1 | kubectl apply -f -
kubectl wait bundledeployment/greeter --for=condition=Installed --timeout=120s
kubectl wait bundledeployment/greeter --for=condition=Healthy --timeout=120s
kubectl get bundledeployments,bundles
kubectl -n demo-app get deployments,pods,configmaps,greetings

step "5. A pivot: the template now points at version 2; what v2 no longer has is pruned"
bd v2 | kubectl apply -f -
for _ in $(seq 1 120); do
  kubectl -n demo-app get configmap greeter-config-v2 >/dev/null 2>&1 &&
    ! kubectl -n demo-app get configmap greeter-config-v1 >/dev/null 2>&1 && break
  sleep 0.5
done
kubectl wait bundledeployment/greeter --for=condition=Healthy --timeout=120s
kubectl get bundledeployments,bundles
kubectl -n demo-app get deployment greeter -o jsonpath='{.spec.template.spec.containers[0].image}{"\n"}'
kubectl -n demo-app get configmaps

step "6. The admission webhook: a Bundle's spec is immutable"
bundle=$(kubectl get bundles -o jsonpath='{.items[0].metadata.name}')
kubectl patch bundle "$bundle" --type=merge -p '{"spec":{"source":{"configMaps":[{"configMap":{"name":"x"}}]}}}' 2>&1 | sed 's/^/  /' || true

step "7. Catalog tools: validate, resolve and test a real catalog (no cluster needed)"
catalog=tests/data/catalogs/community-operators-prod-v4.20
pivoter catalog validate "$catalog" | tail -1
pivoter resolve --catalog "$catalog" --package nfs-provisioner-operator
pivoter catalog test tests/data/channeltest/good

step "Done"
if $keep; then
  echo "cluster and daemon left running: export KUBECONFIG=$KUBECONFIG; daemon pid $daemon_pid"
  echo "stop with: kill $daemon_pid; PIVOTER_CLUSTER_DIR=$PIVOTER_CLUSTER_DIR hack/cluster-down.sh"
fi
