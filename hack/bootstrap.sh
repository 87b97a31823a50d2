#!/usr/bin/env bash
# Installs what pivoter needs on a machine that has none of it, idempotently:
# a Python 3.11+ virtualenv in .venv with pivoter and its test/dev extras installed (editable).
# Re-running is cheap: pip runs again only when pyproject.toml, setup.py or proto/*.proto changed
# (setup.py generates the gRPC stubs from proto/ at install time); when only HEAD moved, the version
# module (pivoter/_version.py: version, commit, date) is rewritten in place, without pip.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-}
if [[ -z "$PYTHON" ]]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
      PYTHON=$candidate
      break
    fi
  done
fi
if [[ -z "$PYTHON" ]]; then
  echo "bootstrap: need Python 3.11 or newer on PATH (or set PYTHON=/path/to/python3.11)" >&2
  exit 1
fi

if [[ ! -x .venv/bin/python ]]; then
  echo "bootstrap: creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv || {
    echo "bootstrap: '$PYTHON -m venv' failed; on Debian install python3-venv" >&2
    exit 1
  }
fi

stamp=.venv/.pivoter-installed
want=$(cat pyproject.toml $(ls setup.py proto/*.proto 2>/dev/null) | sha256sum | cut -d" " -f1)
if [[ ! -f $stamp || "$(cat "$stamp")" != "$want" ]]; then
  echo "bootstrap: installing pivoter and its test/dev dependencies into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test,dev]'
  echo "$want" >"$stamp"
fi

# An editable install is not rebuilt on every commit, so its version module would name the commit
# it was installed at; setup.py rewrites it (setuptools-scm is a dev extra) when HEAD moves.
head_stamp=.venv/.pivoter-head
head=$(git rev-parse HEAD 2>/dev/null || true)
if [[ -n $head && ( ! -f pivoter/_version.py || "$(cat "$head_stamp" 2>/dev/null)" != "$head" ) ]]; then
  if .venv/bin/python -c 'import setup; setup.refresh_build_info()'; then
    echo "$head" >"$head_stamp"
  else
    echo "bootstrap: could not refresh pivoter/_version.py (pivoter version may be stale)" >&2
  fi
fi
