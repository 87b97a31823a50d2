#!/usr/bin/env bash
# The inner loop: every test that needs neither the local control plane nor an external tool
# nor minutes over the full catalogs of ../shared (markers `cluster`, `tools`, `slow`), spread
# over the machine's cores with pytest-xdist. No tools are built. Extra arguments go to pytest
# (e.g. -k resolver, or -n 4). CI runs everything with hack/test.sh. Without ../shared beside the
# checkout (a plain clone) the tests that need it skip, saying so (`requires_shared`).
set -euo pipefail
cd "$(dirname "$0")/.."

hack/bootstrap.sh
# shellcheck disable=SC1091
source .venv/bin/activate
# Let Python keep compiled modules (some machines set PYTHONDONTWRITEBYTECODE): otherwise every
# process compiles what it imports again, and pytest rewrites every test module's asserts anew
# (about 5 s of each test process's start).
unset PYTHONDONTWRITEBYTECODE

# Four workers on two cores: a fifth of the pure tests wait on purpose (deadlines, stalled
# peers, floods), and the other workers use the cores meanwhile.
exec pytest -m "not cluster and not tools and not slow" -n "${PIVOTER_TEST_WORKERS:-4}" \
  --dist worksteal -p no:cacheprovider "$@"
