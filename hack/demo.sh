#!/usr/bin/env bash
# The main job: installs what it needs, starts a local control plane with a simulated node and the
# pivoter daemon, installs a rukpak-style BundleDeployment and pivots it; then serves an example
# catalog (bundle images in a local registry), installs a Resolution (with a dependency) and a
# PlatformOperator from it, upgrades them when the catalog changes, rolls a broken update back as
# a group, prints the history; serves OLM v1's APIs too: a ClusterCatalog (a catalog image in the
# local registry) and a ClusterExtension whose package needs another (pivoter resolves it; OLM v1
# does not), a broken upgrade rolled back as a group, its history; shows the catalog tools, walks
# greeter's upgrade path live on the cluster (pivoter catalog test --live), and cleans up.
# Usage: hack/demo.sh [--keep] [--image IMAGE]
#   --keep:  leave the cluster and daemon running at the end
#   --image: run the daemon from pivoter's image (hack/image/build.sh) with podman, as a Pod would:
#            deploy/'s service account and RBAC, in-cluster credentials, no admin kubeconfig
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

keep=false image=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --keep) keep=true; shift ;;
    --image) image=${2:?--image needs an image}; shift 2 ;;
    *) die "usage: hack/demo.sh [--keep] [--image IMAGE]" ;;
  esac
done

hack/bootstrap.sh
hack/tools.sh kube registry
# shellcheck disable=SC1091
source .venv/bin/activate
# Let Python keep compiled modules (some machines set PYTHONDONTWRITEBYTECODE): otherwise every
# process compiles what it imports again, and pytest rewrites every test module's asserts anew
# (about 5 s of each test process's start).
unset PYTHONDONTWRITEBYTECODE
export PATH="$PIVOTER_TOOLS_DIR:$PATH"

demo_dir=${PIVOTER_DEMO_DIR:-$HOME/.cache/pivoter/demo}
export PIVOTER_CLUSTER_DIR=$demo_dir/cluster
daemon_pid="" registry_pid="" serve_pid=""
cleanup() {
  for pid in $daemon_pid $serve_pid $registry_pid; do
    { kill "$pid" && wait "$pid"; } 2>/dev/null || true # a server killed by SIGTERM exits 143
  done
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

step "2. The CRDs (rukpak's core.rukpak.io, pivoter.io, platform.openshift.io; OLM v1's) and a namespace"
# crds/olmv1/: pivoter's copies of OLM v1's ClusterCatalog and ClusterExtension (docs/olm-v1.md),
# installed before the daemon starts so that it serves them.
kubectl apply --server-side -f crds/ -f crds/olmv1/ >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
kubectl get crds -o custom-columns=NAME:.metadata.name,GROUP:.spec.group
if [[ -n $image ]]; then # the namespace, service account and RBAC the daemon runs with in a cluster
  kubectl apply -f deploy/00-namespace.yaml -f deploy/01-serviceaccount.yaml -f deploy/02-rbac.yaml \
    -f deploy/03-rbac-installer.yaml
else
  kubectl create namespace pivoter-system
fi

step "3. pivoter run: controllers, metrics, probes, content server, admission webhook, OLM v1's APIs"
metrics=$(free_port) probes=$(free_port) content=$(free_port) webhook=$(free_port)
catalogd=$(free_port)
mkdir -p "$demo_dir"
daemon_args=(--namespace pivoter-system --leader-elect --leader-election-namespace pivoter-system
  --metrics-bind-address "127.0.0.1:$metrics" --health-probe-bind-address "127.0.0.1:$probes"
  --content-bind-address "127.0.0.1:$content" --content-url "http://127.0.0.1:$content"
  --webhook-bind-address "127.0.0.1:$webhook" --webhook-url "https://127.0.0.1:$webhook"
  --catalogd-bind-address "127.0.0.1:$catalogd" --catalogd-url "http://127.0.0.1:$catalogd"
  --log-format text)
if [[ -n $image ]]; then
  echo "from the image $image (podman), as system:serviceaccount:pivoter-system:pivoter"
  hack/image/run.sh --kubeconfig "$KUBECONFIG" --name pivoter-demo "$image" run "${daemon_args[@]}" \
    >"$demo_dir/pivoter.log" 2>&1 &
else
  pivoter run --kubeconfig "$KUBECONFIG" --store-dir "$demo_dir/store" "${daemon_args[@]}" \
    >"$demo_dir/pivoter.log" 2>&1 &
fi
daemon_pid=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$probes/readyz" >/dev/null 2>&1 && break
  kill -0 "$daemon_pid" 2>/dev/null || die "pivoter run exited; see $demo_dir/pivoter.log"
  sleep 0.5
done
echo "/healthz: $(curl -fsS "http://127.0.0.1:$probes/healthz")"
echo "/readyz:  $(curl -fsS "http://127.0.0.1:$probes/readyz")"
echo "/metrics (excerpt):"
curl -fsS "http://127.0.0.1:$metrics/metrics" | grep -E '^pivoter_leader|^workqueue_depth' | head -5
kubectl -n pivoter-system get lease
# --olmv1=auto (the default): crds/olmv1/ are pivoter's and no OLM v1 controller runs, so serve.
grep -o 'OLM v1 APIs: .*' "$demo_dir/pivoter.log" | head -1

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

step "7. An example catalog: bundle images in a local registry, served by pivoter catalog serve"
registry_port=$(free_port) grpc_port=$(free_port) http_port=$(free_port)
mkdir -p "$demo_dir/registry" "$demo_dir/catalog"
cat >"$demo_dir/registry/config.yml" <<EOF
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $demo_dir/registry/data}, delete: {enabled: true}}
http: {addr: "127.0.0.1:$registry_port", debug: {addr: ""}}
EOF
registry serve "$demo_dir/registry/config.yml" >"$demo_dir/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 40); do
  curl -fsS "http://127.0.0.1:$registry_port/v2/" >/dev/null 2>&1 && break
  sleep 0.25
done
python hack/demo/publish.py 1 --registry "127.0.0.1:$registry_port" --dir "$demo_dir/catalog"
pivoter catalog serve "$demo_dir/catalog" --name demo --grpc-port "$grpc_port" \
  --http-port "$http_port" >"$demo_dir/catalog-serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 60); do
  curl -fsS "http://127.0.0.1:$http_port/catalogs/demo/api/v1/all" >/dev/null 2>&1 && break
  sleep 0.25
done
kubectl create namespace demo-apps
kubectl apply -f - <<EOF
apiVersion: pivoter.io/v1alpha1
kind: Catalog
metadata: {name: demo}
spec:
  source: {type: grpc, grpc: {address: "127.0.0.1:$grpc_port"}}
  pollInterval: 2s
EOF
kubectl wait catalog/demo --for=condition=Serving --timeout=60s
kubectl get catalogs

step "8. A Resolution (greeter, which needs greeter-db) and a PlatformOperator (hello)"
kubectl apply -f - <<EOF
apiVersion: pivoter.io/v1alpha1
kind: Resolution
metadata: {name: greeter}
spec:
  packages: [{name: greeter}]
  progressDeadlineSeconds: 60
---
apiVersion: platform.openshift.io/v1alpha1
kind: PlatformOperator
metadata: {name: hello}
spec:
  package: {name: hello}
EOF
kubectl wait resolution/greeter --for=condition=Ready --timeout=120s
kubectl wait platformoperator/hello --for=condition=Installed --timeout=120s
kubectl get resolutions,platformoperators
kubectl get bundledeployments
kubectl -n demo-apps get configmap greeter -o jsonpath='{.data.greeting}{"\n"}'
kubectl -n pivoter-system get configmaps -l pivoter.io/input-name=greeter

status_of() { kubectl get resolution/greeter -o jsonpath="{.status.$1}"; }
wait_status() { # FIELD VALUE
  for _ in $(seq 1 240); do
    [[ $(status_of "$1") == "$2" ]] && return 0
    sleep 0.5
  done
  kubectl get resolution/greeter -o yaml | sed -n '/^status:/,$p'
  die "resolution/greeter: status.$1 never became $2"
}

step "9. The catalog gains greeter 1.1.0: re-resolved, a new revision, a grouped pivot"
python hack/demo/publish.py 2 --registry "127.0.0.1:$registry_port" --dir "$demo_dir/catalog"
wait_status lastSuccessfulRevision 2
kubectl wait resolution/greeter --for=condition=Ready --timeout=120s
kubectl -n demo-apps get configmap greeter -o jsonpath='{.data.greeting}{"\n"}'

step "10. A broken greeter 1.2.0: the group fails and rolls back to revision 2"
python hack/demo/publish.py 3 --registry "127.0.0.1:$registry_port" --dir "$demo_dir/catalog"
wait_status pivot.phase RolledBack
kubectl get resolution/greeter \
  -o jsonpath='failed: {.status.pivot.failedBundle}: {.status.pivot.message}{"\n"}'
kubectl -n demo-apps get configmap greeter -o jsonpath='{.data.greeting}{"\n"}'
pivoter history greeter --kubeconfig "$KUBECONFIG" --namespace pivoter-system

step "11. OLM v1's APIs: a ClusterCatalog (a catalog image) and a ClusterExtension with a dependency"
catalog_image=$(python hack/demo/publish_olmv1.py 1 --registry "127.0.0.1:$registry_port")
kubectl create namespace guestbook
# pivoter installs as the ServiceAccount a ClusterExtension names: this one may apply what the
# guestbook bundles hold (CRDs, Deployments), and no more.
kubectl apply -f - <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: guestbook-installer, namespace: guestbook}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: guestbook-installer}
rules:
  - apiGroups: [apiextensions.k8s.io]
    resources: [customresourcedefinitions]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: guestbook-installer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: guestbook-installer}
subjects: [{kind: ServiceAccount, name: guestbook-installer, namespace: guestbook}]
---
apiVersion: olm.operatorframework.io/v1
kind: ClusterCatalog
metadata: {name: demo-olmv1}
spec:
  source: {type: Image, image: {ref: "$catalog_image"}}
---
apiVersion: olm.operatorframework.io/v1
kind: ClusterExtension
metadata:
  name: guestbook
  annotations:
    pivoter.io/dependencies: Install
    pivoter.io/auto-rollback: "true"
spec:
  namespace: guestbook
  serviceAccount: {name: guestbook-installer}
  source:
    sourceType: Catalog
    catalog: {packageName: guestbook}
EOF
echo "guestbook needs the GuestbookStore API: OLM v1 does not resolve dependencies (it refuses the" \
  "bundle); pivoter does (pivoter.io/dependencies: Install) and installs guestbook-store in the same group"
kubectl wait clustercatalog/demo-olmv1 --for=condition=Serving --timeout=60s
kubectl wait clusterextension/guestbook --for=condition=Installed --timeout=120s
kubectl get clustercatalogs,clusterextensions
kubectl get clusterextension/guestbook \
  -o jsonpath='{range .status.selection[*]}selected {.package} {.version}{"\n"}{end}'
kubectl get clusterextension/guestbook -o jsonpath='applied in waves: {.status.pivot.waves}{"\n"}'
images='DEPLOYMENT:.metadata.name,IMAGE:.spec.template.spec.containers[0].image'
kubectl -n guestbook get deployments -o custom-columns="$images"

step "12. The catalog image gains guestbook 1.1.0, broken, needing guestbook-store 1.1.0: both go back"
catalog_image=$(python hack/demo/publish_olmv1.py 2 --registry "127.0.0.1:$registry_port")
kubectl patch clustercatalog/demo-olmv1 --type=merge \
  -p "{\"spec\":{\"source\":{\"image\":{\"ref\":\"$catalog_image\"}}}}"
# pivoter keeps an installed dependency where it is unless asked (docs/resolution.md): UpToDate
# says why 1.1.0 is not taken, and asking for it moves both packages in one group.
kubectl wait clusterextension/guestbook --for=condition=UpToDate=False --timeout=60s >/dev/null
kubectl get clusterextension/guestbook \
  -o jsonpath='{range .status.conditions[?(@.type=="UpToDate")]}UpToDate: {.message}{"\n"}{end}'
echo "asking for guestbook >=1.1.0 (spec.source.catalog.version): revision 2 moves both"
kubectl patch clusterextension/guestbook --type=merge \
  -p '{"spec":{"source":{"catalog":{"version":">=1.1.0"}}}}'
ce_phase() { kubectl get clusterextension/guestbook -o jsonpath='{.status.pivot.phase}'; }
for _ in $(seq 1 240); do
  [[ $(ce_phase) == RolledBack ]] && break
  sleep 0.5
done
[[ $(ce_phase) == RolledBack ]] || die "clusterextension/guestbook: the broken upgrade never rolled back"
kubectl get clusterextension/guestbook \
  -o jsonpath='{range .status.conditions[?(@.type=="Progressing")]}Progressing {.reason}: {.message}{"\n"}{end}'
kubectl -n guestbook get deployments -o custom-columns="$images"
pivoter history clusterextension/guestbook --kubeconfig "$KUBECONFIG" --namespace pivoter-system

step "13. Catalog tools: validate, resolve and test a real catalog (no cluster needed)"
catalog=tests/data/catalogs/community-operators-prod-v4.20
pivoter catalog validate "$catalog" | tail -1
pivoter resolve --catalog "$catalog" --package nfs-provisioner-operator
pivoter catalog test tests/data/channeltest/good

step "14. A catalog maintainer walks greeter's channel on the cluster: catalog test --live"
# The walk's temporary Resolution must be the only input installing greeter.
kubectl delete resolution/greeter --wait=true --timeout=120s
rc=0
pivoter catalog test "$demo_dir/catalog" --live --package greeter --kubeconfig "$KUBECONFIG" \
  --progress-deadline 30 || rc=$?
[[ $rc == 3 ]] || die "the live walk should stop at the broken greeter 1.2.0 (exit 3), got $rc"

step "Done"
if $keep; then
  echo "cluster and daemon left running: export KUBECONFIG=$KUBECONFIG; daemon pid $daemon_pid"
  echo "the registry (pid $registry_pid) and the catalog server (pid $serve_pid) too"
  echo "stop with: kill $daemon_pid $serve_pid $registry_pid;" \
    "PIVOTER_CLUSTER_DIR=$PIVOTER_CLUSTER_DIR hack/cluster-down.sh"
fi
