#!/usr/bin/env bash
# Installs the CNCF distribution registry (the reference OCI registry) used by the provisioner
# source tests (tests/provisioners/) as a real registry on loopback.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

go_install_tool registry github.com/distribution/distribution/v3/cmd/registry@v3.1.1
# htpasswd writes the bcrypt password file of the registry's basic-auth test configuration.
apt_install apache2-utils
