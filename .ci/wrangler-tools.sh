#!/usr/bin/env bash
# Installs (once) Cloudflare's wrangler CLI from the npm registry for the
# wrangler conformance suite (tests/wrangler) and the side-by-side benchmark,
# and prints the directory that holds it (its node_modules/.bin/wrangler is
# what they run). 4.86.0 is the newest wrangler that runs on Node 20.
# Cached by version like every pinned npm tool (.ci/npm-pinned.sh).
#
# usage: .ci/wrangler-tools.sh        (prints the directory)
#   OPENINSPECT_TOOLS_CACHE   cache root (default ~/.cache/openinspect-tools)
#   WRANGLER_VERSION          default 4.86.0 (the suite expects this version)
set -Eeuo pipefail
trap 'echo "wrangler-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$(dirname "$0")/npm-pinned.sh"

WRANGLER_VERSION=${WRANGLER_VERSION:-4.86.0}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}

log() { echo "wrangler-tools: $*" >&2; }

command -v node >/dev/null || { log "node is required but not on PATH"; exit 1; }

# Fail here, not in the suite, if the pin did not resolve or the binary does
# not start (no network is needed for --version). wrangler's own install
# scripts only pick the platform's workerd and esbuild packages, which come
# from the registry like everything else.
verify() {
  local got
  got=$(cd "$1" && WRANGLER_SEND_METRICS=false WRANGLER_HIDE_BANNER=true node_modules/.bin/wrangler --version 2>/dev/null | tail -n 1 | tr -d '[:space:]')
  [ "$got" = "$WRANGLER_VERSION" ] || { log "node_modules/.bin/wrangler --version printed '$got', want $WRANGLER_VERSION"; return 1; }
}

npm_pinned_install wrangler "$WRANGLER_VERSION" "10-90 s, ~150 MB" verify
echo "$NPM_PINNED_DIR"
