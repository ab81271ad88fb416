#!/usr/bin/env bash
# Installs (once) Alchemy, the TypeScript infrastructure-as-code tool, from
# the npm registry for the conformance suite (tests/conformance), which
# deploys a Worker with static assets through it with its default settings
# (source maps on), and prints the directory that holds it (its
# node_modules/ is what the suite links in). Cached by version like every
# pinned npm tool (.ci/npm-pinned.sh); cold 30-90 s and ~500 MB, since
# Alchemy depends on wrangler and miniflare.
#
# usage: .ci/alchemy-tools.sh         (prints the directory)
#   OPENINSPECT_TOOLS_CACHE   cache root (default ~/.cache/openinspect-tools)
#   ALCHEMY_VERSION           default 0.94.0 (the suite expects this version)
set -Eeuo pipefail
trap 'echo "alchemy-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$(dirname "$0")/npm-pinned.sh"

ALCHEMY_VERSION=${ALCHEMY_VERSION:-0.94.0}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}

log() { echo "alchemy-tools: $*" >&2; }

command -v node >/dev/null || { log "node is required but not on PATH"; exit 1; }

# Fail here, not in the suite, if the pin did not resolve.
verify() {
  local got
  got=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1] + "/node_modules/alchemy/package.json")).version)' "$1")
  [ "$got" = "$ALCHEMY_VERSION" ] || { log "node_modules/alchemy is $got, want $ALCHEMY_VERSION"; return 1; }
}

npm_pinned_install alchemy "$ALCHEMY_VERSION" "30-90 s, ~500 MB" verify module
echo "$NPM_PINNED_DIR"
