#!/usr/bin/env bash
# Installs Debian's chromium: the catalog browser view (/ui/ of `pivoter catalog serve`) is tested
# in a real headless browser driven by Playwright with executable_path=/usr/bin/chromium (no
# browser download). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=hack/lib.sh
source hack/lib.sh

apt_install chromium
command -v chromium >/dev/null 2>&1 || die "chromium is installed but not on PATH"
