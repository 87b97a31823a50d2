#!/usr/bin/env bash
# Runs podman with the project's own configuration, so that building and running the image needs
# no change to /etc: a containers.conf (runc; ulimits within this process's hard limits) and a
# storage.conf (images and layers under $PIVOTER_CACHE/image/storage, kept between runs so warm
# builds reuse layers). Both are written next to the storage on every call.
# Why: Debian's default runtime crun refuses a hybrid cgroup v1 layout ("cgroups in hybrid mode
# not supported"), and podman's default ulimits (nofile 1048576, nproc 32768) can only be set by a
# process with CAP_SYS_RESOURCE; runc with limits no higher than ours works (docs/image.md).
# Usage: hack/image/podman.sh ARGS...   (e.g. hack/image/podman.sh images)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=hack/lib.sh
source "$here/hack/lib.sh"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  bash "$here/hack/tools/podman.sh"
fi

conf_dir="$PIVOTER_CACHE/image"
storage="$conf_dir/storage"
mkdir -p "$storage"
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[[ $nofile == unlimited ]] && nofile=1048576
[[ $nproc == unlimited ]] && nproc=32768
(( nproc > 32768 )) && nproc=32768
cat >"$conf_dir/containers.conf" <<CONF
# Written by hack/image/podman.sh; see there.
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
cat >"$conf_dir/storage.conf" <<CONF
# Written by hack/image/podman.sh; see there.
[storage]
driver = "overlay"
graphroot = "$storage"
runroot = "${XDG_RUNTIME_DIR:-/run}/pivoter-containers-$(printf %s "$storage" | sha256sum | cut -c1-8)"
CONF
export CONTAINERS_CONF="$conf_dir/containers.conf"
export CONTAINERS_STORAGE_CONF="$conf_dir/storage.conf"
exec podman "$@"
