#!/usr/bin/env bash
# Builds the image's base from Debian packages (no registry needed): Debian 12's Python 3.11, CA
# certificates, git and ssh (the git bundle source runs them), as a root filesystem tarball made by
# mmdebstrap. Prints the tarball's path. Cached under $PIVOTER_CACHE/image, keyed by this script
# (suite, package list, exclusions): a second run returns at once. Delete the file to refresh it
# with Debian's newest security updates.
# Usage: hack/image/base.sh            (then: podman import "$(hack/image/base.sh)" IMAGE)
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

SUITE=bookworm
# python3-venv: the build stage makes the virtualenv; git and openssh-client: the git bundle source;
# libstdc++6: the C++ extensions of the locked wheels (python-sat, google-re2, grpcio-tools).
PACKAGES=python3,python3-venv,ca-certificates,git,openssh-client,libstdc++6
# What a container never reads: documentation (copyright files kept), manuals, translations.
EXCLUDES=(
  path-exclude=/usr/share/doc/*
  path-include=/usr/share/doc/*/copyright
  path-exclude=/usr/share/man/*
  path-exclude=/usr/share/info/*
  path-exclude=/usr/share/locale/*
  path-exclude=/usr/share/lintian/*
  path-exclude=/usr/share/bash-completion/*
)

# After installing: caches and logs, and perl's module library (about 47 MB), which git depends on
# only for commands pivoter never runs (send-email, svn, ...); perl-base, which dpkg uses, stays.
# shellcheck disable=SC2016 # "$1" is the root directory mmdebstrap passes to the hook
CLEANUP='rm -rf "$1"/var/cache/* "$1"/var/log/* "$1"/var/lib/apt/lists/* "$1"/usr/share/perl/5.* "$1"/usr/lib/*-linux-gnu/perl/5.*'

key=$(sha256sum <"$0" | cut -c1-16)
out_dir="$PIVOTER_CACHE/image"
tarball="$out_dir/base-$SUITE-$key.tar"
if [[ -s $tarball ]]; then
  echo "$tarball"
  exit 0
fi

command -v mmdebstrap >/dev/null || hack/tools/podman.sh
mkdir -p "$out_dir"
dpkgopts=()
for rule in "${EXCLUDES[@]}"; do dpkgopts+=(--dpkgopt="$rule"); done
log "building the image base ($SUITE: $PACKAGES) into $tarball"
start=$(date +%s)
tmp="$out_dir/.base-$$.tar" # mmdebstrap picks the output format by the name's ending
trap 'rm -f "$tmp"' EXIT
# essential: only Essential packages plus the list (no apt: the image never installs packages).
# The python3 byte-code caches are kept: compiled once here instead of at every start.
mmdebstrap --quiet --variant=essential --include="$PACKAGES" "${dpkgopts[@]}" \
  --customize-hook="$CLEANUP" \
  "$SUITE" "$tmp" >&2 || die "mmdebstrap failed (see above)"
mv -f "$tmp" "$tarball"
# Bases of earlier package lists are not used again.
find "$out_dir" -maxdepth 1 -name 'base-*.tar' ! -name "$(basename "$tarball")" -delete
log "image base built in $(($(date +%s) - start)) s ($(du -m "$tarball" | cut -f1) MB)"
echo "$tarball"
