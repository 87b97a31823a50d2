#!/usr/bin/env bash
# Runs pivoter's image with podman against a cluster the way a Pod runs it: in-cluster
# configuration only (no kubeconfig in the container): a token of the service account from the
# TokenRequest API, the cluster's CA and the namespace mounted at
# /var/run/secrets/kubernetes.io/serviceaccount, KUBERNETES_SERVICE_HOST/PORT naming the API
# server; and deploy/'s securityContext: user 65532, read-only root filesystem, no capabilities,
# no privilege escalation, the runtime's default seccomp profile, /tmp and the store as tmpfs.
# The host's network (the API server, catalog servers and registries on loopback stay reachable).
# The service account needs deploy/'s RBAC applied (hack/demo.sh --image does it).
# Usage: hack/image/run.sh --kubeconfig FILE [--service-account NS/NAME] [--name NAME]
#          [--entrypoint CMD] IMAGE [ARGS...]
#        (ARGS go to the entrypoint, `pivoter` unless --entrypoint says otherwise; default `run`)
# podman runs in the foreground; SIGTERM to this script reaches pivoter (graceful shutdown).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=hack/lib.sh
source "$here/hack/lib.sh"

kubeconfig="" account=pivoter-system/pivoter name=pivoter entrypoint=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --kubeconfig) kubeconfig=$2; shift 2 ;;
    --service-account) account=$2; shift 2 ;;
    --name) name=$2; shift 2 ;;
    --entrypoint) entrypoint=(--entrypoint "$2"); shift 2 ;;
    --*) die "unknown option: $1 (see the usage in $0)" ;;
    *) break ;;
  esac
done
[[ -n $kubeconfig && $# -ge 1 ]] || die "usage: $0 --kubeconfig FILE [--service-account NS/NAME] IMAGE [ARGS...]"
image=$1
shift
namespace=${account%%/*} sa=${account##*/}
kubectl=(kubectl --kubeconfig "$kubeconfig")

server=$("${kubectl[@]}" config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
[[ $server =~ ^https://([^/:]+|\[[^]]+\]):([0-9]+)/?$ ]] || die "API server $server is not https://HOST:PORT"
host=${BASH_REMATCH[1]} port=${BASH_REMATCH[2]}
host=${host#[}
host=${host%]}

secrets=$(mktemp -d "${TMPDIR:-/tmp}/pivoter-sa.XXXXXX")
trap 'rm -rf "$secrets"' EXIT
ca_data=$("${kubectl[@]}" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
if [[ -n $ca_data ]]; then
  base64 -d <<<"$ca_data" >"$secrets/ca.crt"
else
  ca_file=$("${kubectl[@]}" config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')
  cp "$ca_file" "$secrets/ca.crt"
fi
# A token bound to the service account (as the kubelet projects one), valid for a day.
"${kubectl[@]}" create token "$sa" --namespace "$namespace" --duration 24h >"$secrets/token" ||
  die "no token for service account $account (is deploy/ applied?)"
printf %s "$namespace" >"$secrets/namespace"
chmod 0755 "$secrets"
chmod 0644 "$secrets"/*

# Not exec: the trap removes the token when the container ends.
"$here/hack/image/podman.sh" run --rm --replace --name "$name" --hostname "$name" --network host \
  --user 65532:65532 --read-only --cap-drop ALL --security-opt no-new-privileges \
  --tmpfs /tmp:rw,size=256m --tmpfs /var/cache/pivoter/bundles:rw,size=1g,mode=1777 \
  --volume "$secrets:/var/run/secrets/kubernetes.io/serviceaccount:ro" \
  --env KUBERNETES_SERVICE_HOST="$host" --env KUBERNETES_SERVICE_PORT="$port" \
  ${entrypoint[@]+"${entrypoint[@]}"} "$image" "$@" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' TERM INT
status=0
while kill -0 "$pid" 2>/dev/null; do # a trapped signal interrupts wait: wait again
  if wait "$pid"; then status=0; else status=$?; fi
done
exit "$status"
