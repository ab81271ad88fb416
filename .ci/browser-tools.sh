#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed at /usr/bin/chromium for the
# browser tests (tests/browser and the engine test that loads the deployed
# web UI): they run it headless and fail, never skip, when it is missing.
#
# Chromium comes from the distribution, not from a download of our own: it is
# the package a Debian CI image gets with apt-get, kept current by the
# security archive. The install needs root (CI runs as root). A present and
# starting binary returns at once; `apt-get update` runs only when the package
# lists do not offer chromium or the install fails on stale lists.
#
# usage: .ci/browser-tools.sh         (prints the path of the binary)
#   CHROMIUM   path the tests run (default /usr/bin/chromium)
set -Eeuo pipefail
trap 'echo "browser-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
log() { echo "browser-tools: $*" >&2; }

# chromium --version reads no profile and opens no display.
working() { [ -x "$CHROMIUM" ] && "$CHROMIUM" --version >/dev/null 2>&1; }

if working; then
  echo "$CHROMIUM"
  exit 0
fi
if [ "$CHROMIUM" != /usr/bin/chromium ]; then
  log "CHROMIUM=$CHROMIUM does not run; only Debian's /usr/bin/chromium is installed by this script"
  exit 1
fi
command -v apt-get >/dev/null || { log "apt-get is required (Debian or Ubuntu) but not on PATH"; exit 1; }
if [ "$(id -u)" != 0 ]; then
  log "installing chromium needs root; run: sudo $0"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_quiet=(-q -y -o Dpkg::Use-Pty=0 -o APT::Color=0)
# Recommends would pull in a notification daemon, upower and the like, which
# a headless run never uses; fonts-liberation gives screenshots real glyphs.
packages=(chromium fonts-liberation)

offered() { apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; }
install_packages() { apt-get "${apt_quiet[@]}" install --no-install-recommends "${packages[@]}" >&2; }

start=$(date +%s)
if ! offered; then
  log "the package lists do not offer chromium; running apt-get update"
  apt-get "${apt_quiet[@]}" update >&2
fi
log "installing Debian's ${packages[*]} (cold: about a minute, ~300 MB)"
if ! install_packages; then
  # The usual cause is lists that name a version the mirror no longer has.
  log "install failed; refreshing the package lists and retrying once"
  apt-get "${apt_quiet[@]}" update >&2
  install_packages
fi
if ! working; then
  log "$CHROMIUM --version does not run after the install"
  exit 1
fi
log "$("$CHROMIUM" --version) installed in $(($(date +%s) - start)) s"
echo "$CHROMIUM"
