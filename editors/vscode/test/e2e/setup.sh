#!/usr/bin/env bash
# Sets up the VS Code real-editor test (heavy: about 600 MB, several minutes):
#   - Debian packages: chromium (the browser), ripgrep (code-server's search
#     binary, which its npm package would download from outside the registry),
#     and the compilers and headers code-server's native modules build with;
#   - code-server and playwright-core from the npm registry, into
#     test/e2e/node_modules;
#   - the extension's .vsix (npm ci && npm run package).
# Idempotent; writes test/e2e/.work/setup-ok when everything is in place.
# Then run test/e2e/run.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXT="$(cd "$HERE/../.." && pwd)"
WORK="$HERE/.work"
mkdir -p "$WORK"
export XDG_CONFIG_HOME="$WORK/xdg-config"   # code-server writes its config.yaml there
rm -f "$WORK/setup-ok"
say() { printf '[e2e setup %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# -- Debian packages ---------------------------------------------------------------
PACKAGES=(chromium ripgrep build-essential pkg-config python3 libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    say "missing Debian packages: ${missing[*]} (run: sudo apt-get install -y ${missing[*]})"
    exit 1
  fi
  say "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || { say "no chromium at $CHROMIUM"; exit 1; }

# -- Node.js -----------------------------------------------------------------------
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != 20 ]; then
  # code-server 4.100.3 (VS Code 1.100) is built for Node 20; newer code-server needs 22+
  say "Node.js 20 is required for code-server 4.100.3 (found $(node -v))"
  exit 1
fi
# node-gyp builds against the headers of the running node when they are installed
# (Debian/NodeSource put them in /usr/include/node); otherwise it fetches them.
if [ -f /usr/include/node/node.h ]; then
  export npm_config_nodedir=/usr
fi
export npm_config_yes=true          # node-pty's post-install runs `npx node-gyp`
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# -- code-server + playwright-core ---------------------------------------------------
# code-server's own postinstall runs `npm install` inside lib/vscode, where
# @vscode/ripgrep downloads its binary from outside the npm registry. So: install
# without scripts, give @vscode/ripgrep Debian's rg, then run the build scripts.
CS="$HERE/node_modules/code-server"
cd "$HERE"
if [ ! -x "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] || ! node "$CS/out/node/entry.js" --version >/dev/null 2>&1; then
  say "npm install (code-server, playwright-core), scripts off"
  if [ -f package-lock.json ]; then npm ci --ignore-scripts; else npm install --ignore-scripts; fi
  say "npm install in code-server's lib/vscode, scripts off"
  (cd "$CS/lib/vscode" && npm install --omit=dev --ignore-scripts)
  mkdir -p "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin"
  ln -sf "$(command -v rg)" "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg"
  say "building code-server's native modules (npm rebuild; the slow part)"
  (cd "$CS/lib/vscode" && npm rebuild)
  npm rebuild argon2
  say "code-server postinstall (symlinks, built-in extensions)"
  (cd "$CS" && npm_config_unsafe_perm=true \
      npm_config_user_agent="npm/$(npm -v) node/$(node -v) $(uname | tr '[:upper:]' '[:lower:]') x64" \
      sh ./postinstall.sh)
fi
say "code-server $(node "$CS/out/node/entry.js" --version | grep -m1 "^[0-9]")"

# -- the extension -----------------------------------------------------------------
say "building the .vsix"
cd "$EXT"
npm ci
npm run package
[ -f "$EXT/dist/gdg-lsp.vsix" ]
touch "$WORK/setup-ok"
say "ready: run $HERE/run.sh"
