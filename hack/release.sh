#!/usr/bin/env bash
# Builds a release of pivoter into dist/ (git-ignored) from a clean clone of HEAD, so nothing
# uncommitted reaches it:
#   pivoter-V.tar.gz, pivoter-V-py3-none-any.whl  the sdist, and the wheel built from it
#   image.txt                                     the image, REPOSITORY@sha256:DIGEST as pushed
#   install.yaml                                  `pivoter install --dry-run -o yaml --image` that
#                                                 digest: the CRDs and deploy/, by the wheel itself
#   pivoter-V.python.cdx.json                     CycloneDX SBOM of the wheel's environment (the
#                                                 wheel and requirements.lock), by cyclonedx-py
#   pivoter-V.image.cdx.json                      CycloneDX SBOM of the image, by syft
#   SHA256SUMS                                    of every file above (`sha256sum -c SHA256SUMS`)
# VERSION must be the tag at HEAD (v0.1.0 or 0.1.0); --snapshot builds the development version
# setuptools-scm gives HEAD instead. See docs/releasing.md.
# Usage: hack/release.sh VERSION|--snapshot [--registry PREFIX] [--no-image] [--out DIR]
#   --registry: push the image to PREFIX/pivoter:TAG (e.g. ghcr.io/pivoter; log in first with
#               hack/image/podman.sh login). Default: a plain-http registry on loopback that this
#               script starts and stops (the digest is still the image's; nothing is published).
#               A loopback PREFIX (127.0.0.1:PORT, localhost:PORT) is pushed to over plain http.
#   --no-image: a dry run without podman: no image, no image SBOM; install.yaml names the
#               released image by tag (REPOSITORY:TAG), not by digest.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
# shellcheck source=hack/lib.sh
source hack/lib.sh

CYCLONEDX=cyclonedx-bom==7.5.0
DEFAULT_REPOSITORY=ghcr.io/pivoter/pivoter # pivoter.install.manifests.DEFAULT_REPOSITORY

usage() { die "usage: hack/release.sh VERSION|--snapshot [--registry PREFIX] [--no-image] [--out DIR]"; }
wanted="" snapshot=false registry="" image=true out=$here/dist
while [[ $# -gt 0 ]]; do
  case $1 in
    --snapshot) snapshot=true; shift ;;
    --registry) [[ $# -ge 2 ]] || usage; registry=${2%/}; shift 2 ;;
    --no-image) image=false; shift ;;
    --out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
    -*) usage ;;
    *) [[ -z $wanted ]] || usage; wanted=${1#v}; shift ;;
  esac
done
$snapshot && [[ -n $wanted ]] && die "give a VERSION or --snapshot, not both"
$snapshot || [[ -n $wanted ]] || usage

PYTHON=${PYTHON:-python3}
# Refuse a VERSION that is not the tag at HEAD: a release is what the tag names, nothing else.
commit=$(git rev-parse --verify HEAD)
if ! $snapshot; then
  tags=$(git tag --points-at HEAD --list 'v*')
  grep -qxF "v$wanted" <<<"$tags" ||
    die "VERSION $wanted is not the tag at HEAD (${commit:0:12} has: ${tags:-no v* tag}); tag it, or use --snapshot"
fi
[[ -z $(git status --porcelain --untracked-files=no) ]] ||
  log "note: the work tree has uncommitted changes; the release is built from HEAD without them"

work=$(mktemp -d)
registry_pid=""
cleanup() {
  [[ -n $registry_pid ]] && kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A clean clone of HEAD, with the tags, as CI and a fresh machine have it.
git clone --quiet --no-checkout "$here" "$work/src" || die "git clone failed"
git -C "$work/src" checkout --quiet --detach "$commit"
epoch=${SOURCE_DATE_EPOCH:-$(git show -s --format=%ct "$commit")}
export SOURCE_DATE_EPOCH=$epoch # setup.py's build date, and the wheel's file times

# The build environment: exactly requirements-build.lock, once per lock (pip --require-hashes).
lock_key=$(sha256sum requirements-build.lock | cut -c1-16)
build_venv=$PIVOTER_CACHE/release/build-$lock_key
if [[ ! -f $build_venv/.complete ]]; then # (a virtualenv cannot be moved: made in place)
  log "creating the build environment from requirements-build.lock"
  rm -rf "$PIVOTER_CACHE"/release/build-*
  "$PYTHON" -m venv "$build_venv"
  "$build_venv/bin/pip" install --quiet --require-hashes --no-deps -r requirements-build.lock
  touch "$build_venv/.complete"
fi

# The sdist, then the wheel from the sdist (as `python -m build` does: the sdist must build alone).
log "building the sdist and the wheel of ${commit:0:12}"
mkdir -p "$work/dist"
sdist=$(cd "$work/src" && "$build_venv/bin/python" -c \
  'import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))' \
  "$work/dist" 2>"$work/sdist.log" | tail -n1) || { cat "$work/sdist.log" >&2; die "sdist failed"; }
# setuptools stamps the sdist with the time of the build (each entry, the gzip header): rewritten
# with SOURCE_DATE_EPOCH, in name order, with no owner, so the same commit gives the same sdist.
"$build_venv/bin/python" - "$work/dist/$sdist" "$epoch" <<'PY' || die "normalising $sdist failed"
import gzip, io, sys, tarfile

path, epoch = sys.argv[1], int(sys.argv[2])
with tarfile.open(path) as source:
    entries = [(m, source.extractfile(m).read() if m.isfile() else None) for m in source]
tar = io.BytesIO()
with tarfile.open(fileobj=tar, mode="w", format=tarfile.PAX_FORMAT) as out:
    for member, data in sorted(entries, key=lambda entry: entry[0].name):
        member.mtime, member.uid, member.gid, member.uname, member.gname = epoch, 0, 0, "", ""
        member.pax_headers = {}
        out.addfile(member, None if data is None else io.BytesIO(data))
with open(path, "wb") as f, gzip.GzipFile("", "wb", 9, f, mtime=epoch) as compressed:
    compressed.write(tar.getvalue())
PY
mkdir "$work/unpacked"
tar -xzf "$work/dist/$sdist" -C "$work/unpacked"
"$build_venv/bin/pip" wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/dist" \
  "$work/unpacked/${sdist%.tar.gz}" || die "building the wheel from $sdist failed"
wheel=$(cd "$work/dist" && ls pivoter-*.whl)
version=${sdist#pivoter-}
version=${version%.tar.gz}
$snapshot || [[ $version == "$wanted" ]] || die "the build says version $version, the tag $wanted"
log "pivoter $version: $sdist, $wheel"

# The wheel's environment: requirements.lock and the wheel, nothing else (pip check proves it; no
# pip or setuptools of its own, so its SBOM lists what pivoter runs with and only that).
"$PYTHON" -m venv --without-pip "$work/venv"
pip=("$build_venv/bin/pip" --python "$work/venv/bin/python")
"${pip[@]}" install --quiet --require-hashes --no-deps -r requirements.lock
# From dist/ as from an index: no direct_url.json naming this temporary path in its metadata (the
# SBOM would carry it, and differ from one build to the next).
"${pip[@]}" install --quiet --no-deps --no-index --find-links "$work/dist" "pivoter==$version"
"${pip[@]}" check >&2 || die "the wheel's environment is incomplete (pip check)"
said=$("$work/venv/bin/pivoter" version -o json | "$work/venv/bin/python" -c \
  'import json, sys; d = json.load(sys.stdin); print(d["pivoter"], d["commit"])')
[[ $said == "$version $commit" ]] || die "the wheel says '$said', expected '$version $commit'"

# The image, pushed; its digest is what install.yaml names.
tag=${version//+/-} # an image tag cannot carry '+' (pivoter.install.manifests.image_tag)
if $image; then
  if [[ -z $registry ]]; then
    bash hack/tools.sh registry >/dev/null
    port=$("$work/venv/bin/python" -c \
      'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$work/registry"
    cat >"$work/registry/config.yml" <<CONF
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $work/registry/data}}
http: {addr: "127.0.0.1:$port", debug: {addr: ""}}
CONF
    "$PIVOTER_TOOLS_DIR/registry" serve "$work/registry/config.yml" >"$work/registry/log" 2>&1 &
    registry_pid=$!
    registry=127.0.0.1:$port
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
      sleep 0.1
    done
  fi
  tls=()
  [[ $registry == 127.0.0.1:* || $registry == localhost:* ]] && tls=(--tls-verify=false)
  repository=$registry/pivoter
  local_tag=localhost/pivoter:release-$tag
  hack/image/build.sh --tag "$local_tag" --revision "$commit" --version "$version" >/dev/null
  hack/image/podman.sh push --quiet "${tls[@]}" --digestfile "$work/digest" \
    "$local_tag" "docker://$repository:$tag" >&2 || die "pushing the image to $repository failed"
  reference=$repository@$(cat "$work/digest")
  echo "$reference" >"$work/dist/image.txt"
  size=$(hack/image/podman.sh image inspect --format '{{.Size}}' "$local_tag")
  log "image $reference ($((size / 1000000)) MB uncompressed)"
else
  reference=$DEFAULT_REPOSITORY:$tag
fi

# install.yaml, by the wheel's own `pivoter install` (the CLI renders what it would apply).
(cd "$work" && "$work/venv/bin/pivoter" install --dry-run -o yaml --image "$reference") \
  >"$work/dist/install.yaml" || die "pivoter install --dry-run failed"

# The SBOMs: the Python environment (cyclonedx-py reads the installed distributions), the image.
tools_venv=$PIVOTER_CACHE/release/cyclonedx
if [[ "$(cat "$tools_venv/.version" 2>/dev/null)" != "$CYCLONEDX" ]]; then
  rm -rf "$tools_venv"
  "$PYTHON" -m venv "$tools_venv"
  "$tools_venv/bin/pip" install --quiet "$CYCLONEDX"
  echo "$CYCLONEDX" >"$tools_venv/.version"
fi
"$tools_venv/bin/cyclonedx-py" environment --output-reproducible --of JSON \
  -o "$work/dist/pivoter-$version.python.cdx.json" "$work/venv/bin/python" ||
  die "cyclonedx-py failed"
if $image; then
  bash hack/tools.sh syft >/dev/null
  hack/image/podman.sh save --quiet --format oci-archive -o "$work/image.tar" "$local_tag"
  SYFT_CHECK_FOR_APP_UPDATE=false "$PIVOTER_TOOLS_DIR/syft" scan --quiet \
    --source-name pivoter --source-version "$version" \
    -o "cyclonedx-json=$work/dist/pivoter-$version.image.cdx.json" "oci-archive:$work/image.tar" ||
    die "syft failed"
  hack/image/podman.sh rmi --ignore "$local_tag" >/dev/null 2>&1 || true
fi

(cd "$work/dist" && sha256sum -- * >SHA256SUMS)
mkdir -p "$out"
rm -f "$out"/pivoter-* "$out"/{image.txt,install.yaml,SHA256SUMS} # an earlier release's
cp -a "$work/dist/." "$out/"
log "release $version in $out:"
(cd "$out" && ls -l) >&2
echo "$version"
