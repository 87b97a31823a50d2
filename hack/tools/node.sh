#!/usr/bin/env bash
# Installs what a real node needs beside the kubelet (hack/image/kubelet.sh builds that): Debian's
# containerd and runc, the CNI plugins (bridge, host-local, loopback, portmap), iptables and ip. Used by
# tests/image/test_real_node.py (pivoter's image as real pods); see docs/image.md, "A real node".
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

apt_install containerd runc containernetworking-plugins iptables iproute2
containerd --version >/dev/null || die "containerd does not run"
