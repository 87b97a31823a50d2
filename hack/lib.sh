# shellcheck shell=bash
# Shared by the hack/ scripts: where tools live, logging, and small checks.
PIVOTER_CACHE=${PIVOTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pivoter}
PIVOTER_TOOLS_DIR=${PIVOTER_TOOLS_DIR:-$PIVOTER_CACHE/bin}
export PIVOTER_CACHE PIVOTER_TOOLS_DIR
mkdir -p "$PIVOTER_TOOLS_DIR"
export PATH="$PIVOTER_TOOLS_DIR:$PATH"

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
die() {
  echo "error: $*" >&2
  exit 1
}

# need_go: fail clearly when there is no Go toolchain (the Go-built tools need one).
need_go() {
  command -v go >/dev/null 2>&1 || [[ -x /usr/local/go/bin/go ]] ||
    die "no Go toolchain on PATH; install Go 1.26 (https://go.dev/dl) and re-run"
  command -v go >/dev/null 2>&1 || export PATH="/usr/local/go/bin:$PATH"
}

# go_install_tool NAME MODULE@VERSION [go build flags...]: go install into the tools dir, once per
# version (a stamp file records the version installed).
go_install_tool() {
  local name=$1 module=$2
  shift 2
  local stamp="$PIVOTER_TOOLS_DIR/.$name.version"
  if [[ -x "$PIVOTER_TOOLS_DIR/$name" && -f $stamp && "$(cat "$stamp")" == "$module" ]]; then
    return 0
  fi
  need_go
  log "building $name from $module (first time only)"
  GOBIN="$PIVOTER_TOOLS_DIR" go install "$@" "$module" || die "go install $module failed"
  echo "$module" >"$stamp"
}

# apt_install PKG...: install Debian packages that are missing (needs root or sudo).
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  log "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    die "apt-get install ${missing[*]} failed"
}
