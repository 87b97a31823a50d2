#!/usr/bin/env bash
# Installs Debian's podman (builds and runs the image without Docker; buildah is its build engine),
# runc (the OCI runtime hack/image/podman.sh selects) and mmdebstrap (builds the image's base from
# Debian packages, hack/image/base.sh). See docs/image.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

apt_install podman runc mmdebstrap
podman --version >/dev/null || die "podman does not run"
