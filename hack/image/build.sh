#!/usr/bin/env bash
# Builds pivoter's image with podman from the Dockerfile, with no Docker and no public registry:
# the base is made from Debian packages (hack/image/base.sh) and helm is built with the host's Go
# (hack/image/helm.sh, given to the Dockerfile's `helm` stage as a build context). The build
# context is a clean checkout of a commit (HEAD by default: commit first), so nothing generated,
# untracked or half-edited reaches the image.
# The context has no .git, so the build's identity is passed as build args: the version
# setuptools-scm gives a clean clone of the commit, the commit, and the date ($SOURCE_DATE_EPOCH
# when set, else the commit's); the image carries them in `pivoter version` and its OCI labels.
# Prints the image's ID on stdout; progress goes to stderr. See docs/image.md.
# Usage: hack/image/build.sh [--tag IMAGE] [--revision REV] [--version V] [--registry HOST:PORT]
#                            [--push]
#   --version:  the version the revision has (hack/release.sh knows it); else setuptools-scm says
#   --registry: push the base there and build FROM it (a plain-http registry on loopback)
#   --push:     also push the built image to --registry, as IMAGE
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
# shellcheck source=hack/lib.sh
source hack/lib.sh

tag=localhost/pivoter:dev revision=HEAD version="" registry="" push=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --tag) tag=$2; shift 2 ;;
    --revision) revision=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --push) push=true; shift ;;
    *) die "unknown argument: $1 (see the usage in $0)" ;;
  esac
done
$push && [[ -z $registry ]] && die "--push needs --registry"
podman=(hack/image/podman.sh)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The base: imported once per base tarball (its name carries the key of its package list).
tarball=$(hack/image/base.sh)
key=$(basename "$tarball" .tar)
base=localhost/pivoter-base:${key#base-}
if ! "${podman[@]}" image exists "$base"; then
  "${podman[@]}" import --quiet "$tarball" "$base" >/dev/null
  # Bases of earlier package lists are not used again.
  "${podman[@]}" images --format '{{.Repository}}:{{.Tag}}' localhost/pivoter-base |
    grep -vxF "$base" | xargs -r "${podman[@]}" rmi --ignore >/dev/null 2>&1 || true
fi
pull=()
if [[ -n $registry ]]; then
  "${podman[@]}" push --quiet --tls-verify=false "$base" "$registry/pivoter-base:${key#base-}"
  base=$registry/pivoter-base:${key#base-}
  pull=(--tls-verify=false)
  trap 'rm -rf "$work"; "${podman[@]}" rmi --ignore "$base" >/dev/null 2>&1 || true' EXIT
fi

# A clean build context: the committed tree of $revision, as a fresh clone has it.
commit=$(git rev-parse --verify --quiet "$revision^{commit}") || die "no such commit: $revision"
mkdir -p "$work/context"
git archive --format=tar "$commit" | tar -x -C "$work/context" || die "git archive $revision failed"

# The build's identity. The version is the one a wheel built in a clean clone of the commit (with
# the tags) has: setuptools-scm, a dev extra of .venv (hack/bootstrap.sh), says it there.
if [[ -z $version ]]; then
  [[ -x .venv/bin/python ]] || die "no .venv: run hack/bootstrap.sh first (or pass --version)"
  git clone --quiet --shared --no-checkout "$here" "$work/scm" || die "git clone for the version failed"
  git -C "$work/scm" checkout --quiet --detach "$commit"
  version=$(cd "$work/scm" && "$here/.venv/bin/python" -m setuptools_scm 2>/dev/null) ||
    die "setuptools-scm found no version for $commit (run hack/bootstrap.sh)"
fi
epoch=${SOURCE_DATE_EPOCH:-$(git show -s --format=%ct "$commit")}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
identity=(--build-arg "PIVOTER_VERSION=$version" --build-arg "PIVOTER_COMMIT=$commit"
  --build-arg "PIVOTER_DATE_EPOCH=$epoch" --build-arg "PIVOTER_CREATED=$created")

# pip inside the build reaches the network the way programs on this host do: with the host's CA
# bundle (where TLS to the index is intercepted, as on the development machines) and its index URL,
# passed as build secrets, never stored in a layer.
ca=""
for candidate in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" \
  /etc/ssl/certs/ca-certificates.crt; do
  if [[ -n $candidate && -f $candidate ]]; then ca=$candidate; break; fi
done
{
  echo "[global]"
  [[ -n ${PIP_INDEX_URL:-} ]] && echo "index-url = $PIP_INDEX_URL"
  [[ -n $ca ]] && echo "cert = /run/secrets/pip-ca"
} >"$work/pip.conf"
secrets=(--secret "id=pip.conf,src=$work/pip.conf")
[[ -n $ca ]] && secrets+=(--secret "id=pip-ca,src=$ca")

helm_dir=$(hack/image/helm.sh)
log "building $tag, pivoter $version, from $base ($revision: ${commit:0:12})"
start=$(date +%s)
"${podman[@]}" build --network host --layers "${pull[@]}" "${secrets[@]}" "${identity[@]}" \
  --build-arg "PYTHON_IMAGE=$base" --build-context "helm=$helm_dir" \
  --iidfile "$work/iid" --tag "$tag" "$work/context" >&2 || die "podman build failed (see above)"
log "built $tag in $(($(date +%s) - start)) s"
# Layers of earlier builds stay as the cache of the next one; those not used for a day go.
"${podman[@]}" image prune --force --filter until=24h >/dev/null 2>&1 || true
if $push; then
  "${podman[@]}" push --quiet --tls-verify=false "$tag" "$registry/${tag#*/}" >&2
fi
cat "$work/iid"
echo
