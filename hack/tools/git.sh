#!/usr/bin/env bash
# Installs git (the git source shells out to it) and sshd/ssh for the ssh-key git tests.
# Debian packages; the tests find them on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

apt_install git openssh-server openssh-client
