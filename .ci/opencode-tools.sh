#!/usr/bin/env bash
# Installs (once) OpenCode, the agent upstream's sandbox runtime runs, at the
# version upstream pins (opencode-ai 1.18.18), and prints the path of its
# `opencode` binary. The npm package opencode-ai picks its platform binary
# (opencode-linux-x64 here, a Bun-compiled ELF of ~180 MB) through an
# optional dependency and a postinstall script, so scripts run. Nothing but
# the npm registry is used; the result is cached outside the clone under a
# name derived from the pin, as .ci/node-tools.sh does.
#
# usage: .ci/opencode-tools.sh          (prints the binary's path; < 0.1 s when cached)
#   OPENINSPECT_TOOLS_CACHE   cache root (default ~/.cache/openinspect-tools)
set -Eeuo pipefail
trap 'echo "opencode-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

OPENCODE_VERSION=${OPENCODE_VERSION:-1.18.18}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
out="$CACHE/opencode-$OPENCODE_VERSION"
log() { echo "opencode-tools: $*" >&2; }

# The binary the package's postinstall links, found in the platform package
# itself (the bin/opencode of opencode-ai is a Node launcher).
find_binary() {
  local b
  for b in "$1"/node_modules/opencode-linux-x64/bin/opencode "$1"/node_modules/opencode-linux-arm64/bin/opencode; do
    [ -x "$b" ] && { echo "$b"; return 0; }
  done
  return 1
}

if [ -f "$out/.complete" ]; then
  find_binary "$out"
  exit 0
fi
for tool in node npm; do
  command -v "$tool" >/dev/null || { log "$tool is required but not on PATH"; exit 1; }
done
mkdir -p "$CACHE"
log "installing opencode-ai@$OPENCODE_VERSION into $out (cold: 20-120 s, ~200 MB)"
tmp=$(mktemp -d "$CACHE/opencode-$OPENCODE_VERSION.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
printf '{"name":"openinspect-opencode","version":"0.0.0","private":true,"dependencies":{"opencode-ai":"%s"}}\n' "$OPENCODE_VERSION" > "$tmp/package.json"
(cd "$tmp" && npm install --no-audit --no-fund --no-package-lock --save-exact --loglevel=error >&2)
bin=$(find_binary "$tmp") || { log "opencode-ai@$OPENCODE_VERSION installed no platform binary for $(uname -m)"; exit 1; }
got=$("$bin" --version 2>/dev/null | tail -1)
[ "$got" = "$OPENCODE_VERSION" ] || { log "opencode --version says $got, pinned $OPENCODE_VERSION"; exit 1; }
touch "$tmp/.complete"
if [ -e "$out" ] && [ ! -f "$out/.complete" ]; then rm -rf "$out"; fi
if ! mv -T "$tmp" "$out" 2>/dev/null; then
  [ -f "$out/.complete" ] || { log "could not move $tmp to $out"; exit 1; }
  rm -rf "$tmp"
fi
trap - EXIT
find_binary "$out"
