#!/usr/bin/env bash
# Writes the image's lock files from pyproject.toml with pip-tools (in a virtualenv of its own under
# $PIVOTER_CACHE, never in .venv): every package of the daemon's dependency closure, and of the
# wheel build's (setuptools, grpcio-tools, ...), pinned with the sha256 of every file PyPI has for
# that version. The Dockerfile installs exactly these with pip --require-hashes. Each file's
# header records a digest of the pyproject.toml lists it came from; tests/image/test_lock.py fails
# when pyproject.toml changes without this being re-run.
# Usage: hack/image/lock.sh [--upgrade]   (--upgrade: newest versions the ranges allow)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

PIP_TOOLS=pip-tools==7.6.2
venv="$PIVOTER_CACHE/image/pip-tools"
if [[ ! -x $venv/bin/pip-compile || "$(cat "$venv/.version" 2>/dev/null)" != "$PIP_TOOLS" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "$PIP_TOOLS"
  echo "$PIP_TOOLS" >"$venv/.version"
fi
# The lock must not depend on this machine's pip configuration (a local wheel directory, ...).
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_NO_INDEX
upgrade=()
[[ ${1:-} == --upgrade ]] && upgrade=(--upgrade)

digest() { .venv/bin/python hack/image/lockdigest.py "$1"; }
compile() { # OUTPUT [pip-compile flags...]
  local out=$1
  shift
  CUSTOM_COMPILE_COMMAND="hack/image/lock.sh" "$venv/bin/pip-compile" --quiet --generate-hashes \
    --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
    ${upgrade[@]+"${upgrade[@]}"} --output-file "$out" "$@" pyproject.toml
}
compile requirements.lock
compile requirements-build.lock --only-build-deps --build-deps-for wheel
for pair in requirements.lock:runtime requirements-build.lock:build; do
  file=${pair%%:*} kind=${pair##*:}
  { echo "# pyproject.toml $kind digest: $(digest "$kind")"; cat "$file"; } >"$file.tmp"
  mv -f "$file.tmp" "$file"
done
log "wrote requirements.lock ($(grep -c '^[a-z0-9].*==' requirements.lock) packages) and requirements-build.lock ($(grep -c '^[a-z0-9].*==' requirements-build.lock))"
