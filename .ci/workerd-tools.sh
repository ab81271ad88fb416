#!/usr/bin/env bash
# Installs (once) workerd, Cloudflare's open-source Workers runtime, from the
# npm registry, and links its binary into the tool cache's bin/ where the
# emulator finds it on PATH (tests/emulator/workerd runs every uploaded script
# in it). 1.20261117.1 is the release issue 24 pins; its binary runs on this
# machine's glibc and needs nothing from Node at run time. Cached by version
# like every pinned npm tool (.ci/npm-pinned.sh).
#
# usage: .ci/workerd-tools.sh        (prints the binary's path)
#   OPENINSPECT_TOOLS_CACHE   cache root (default ~/.cache/openinspect-tools)
#   WORKERD_VERSION           default 1.20261117.1
set -Eeuo pipefail
trap 'echo "workerd-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
. "$(dirname "$0")/npm-pinned.sh"

WORKERD_VERSION=${WORKERD_VERSION:-1.20261117.1}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
binpath=node_modules/@cloudflare/workerd-linux-64/bin/workerd

log() { echo "workerd-tools: $*" >&2; }

# The binary must start and report the pinned release's date.
verify() {
  local got want
  got=$("$1/$binpath" --version 2>/dev/null || true)
  want="workerd $(echo "$WORKERD_VERSION" | sed -E 's/^1\.([0-9]{4})([0-9]{2})([0-9]{2})\..*/\1-\2-\3/')"
  [ "$got" = "$want" ] || { log "workerd --version printed '$got', want '$want'"; return 1; }
}

npm_pinned_install workerd "$WORKERD_VERSION" "5-30 s, ~100 MB" verify
mkdir -p "$CACHE/bin"
ln -sfn "$NPM_PINNED_DIR/$binpath" "$CACHE/bin/workerd"
echo "$NPM_PINNED_DIR/$binpath"
