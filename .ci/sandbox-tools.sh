#!/usr/bin/env bash
# Makes sure Debian's bubblewrap and slirp4netns are installed: the
# emulator's Modal runs each sandbox's command under bwrap (its own mount,
# PID and network namespaces) with slirp4netns giving that network namespace
# a way out to the host's loopback, where the outbound gateway's proxy
# listens. Like .ci/browser-tools.sh: packages from the distribution, root
# needed to install (CI runs as root), `apt-get update` only when the lists
# do not offer them. A present, working pair returns at once.
#
# usage: .ci/sandbox-tools.sh    (prints the two binaries' paths, one a line)
set -Eeuo pipefail
trap 'echo "sandbox-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

log() { echo "sandbox-tools: $*" >&2; }
working() { command -v bwrap >/dev/null && bwrap --version >/dev/null 2>&1 && command -v slirp4netns >/dev/null && slirp4netns --version >/dev/null 2>&1; }

if working; then
  command -v bwrap slirp4netns
  exit 0
fi
command -v apt-get >/dev/null || { log "apt-get is required (Debian or Ubuntu) but not on PATH"; exit 1; }
if [ "$(id -u)" != 0 ]; then
  log "installing bubblewrap and slirp4netns needs root; run: sudo $0"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt_quiet=(-q -y -o Dpkg::Use-Pty=0 -o APT::Color=0)
packages=(bubblewrap slirp4netns)
offered() { apt-cache policy bubblewrap slirp4netns 2>/dev/null | grep -c 'Candidate: [0-9]' | grep -q 2; }
install_packages() { apt-get "${apt_quiet[@]}" install --no-install-recommends "${packages[@]}" >&2; }
if ! offered; then
  log "the package lists do not offer ${packages[*]}; running apt-get update"
  apt-get "${apt_quiet[@]}" update >&2
fi
log "installing Debian's ${packages[*]} (cold: a few seconds, < 1 MB)"
if ! install_packages; then
  log "install failed; refreshing the package lists and retrying once"
  apt-get "${apt_quiet[@]}" update >&2
  install_packages
fi
working || { log "bwrap or slirp4netns does not run after the install"; exit 1; }
command -v bwrap slirp4netns
