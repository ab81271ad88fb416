#!/usr/bin/env bash
# Builds (once) everything the tests start, in three lanes at the same time:
# the pulumi toolchain and staticcheck, the Kubernetes control plane and the
# pulumi-kubernetes plugin, and the registry installs (Python venv, npm
# packages, wrangler, workerd, Debian's chromium). Cold, every lane is mostly
# compiling or downloading, and one lane alone leaves a core idle while it
# links or fetches; side by side they finish minutes sooner on two cores.
# Each lane's output is kept apart and printed when the lane ends, so the log
# reads as three blocks, not an interleaving. Cached, the whole script takes
# well under a second.
set -uo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d "${TMPDIR:-/tmp}/test-tools.XXXXXX")
trap 'rm -rf "$logs"' EXIT

lane_pulumi() {
  ./.ci/tools.sh all && ./.ci/tools.sh staticcheck
}
lane_kubernetes() {
  local part
  for part in etcd apiserver controllers kwok k8s-plugin; do
    ./.ci/kube-tools.sh "$part" || return
  done
}
lane_registries() {
  ./.ci/python-tools.sh && ./.ci/node-tools.sh && ./.ci/wrangler-tools.sh &&
    ./.ci/workerd-tools.sh && ./.ci/browser-tools.sh
}

lanes=(pulumi kubernetes registries)
declare -A pids
for lane in "${lanes[@]}"; do
  (
    start=$(date +%s)
    "lane_$lane"
    rc=$?
    echo $(($(date +%s) - start)) >"$logs/$lane.seconds"
    exit "$rc"
  ) >"$logs/$lane.log" 2>&1 &
  pids[$lane]=$!
done

failed=0
for lane in "${lanes[@]}"; do
  if wait "${pids[$lane]}"; then
    status=ready
  else
    status=FAILED
    failed=1
  fi
  # A cached lane ends within the second and has nothing to show.
  if [ "$status" = FAILED ] || [ "$(cat "$logs/$lane.seconds" 2>/dev/null || echo 1)" -gt 0 ]; then
    sed "s/^/  /" "$logs/$lane.log"
  fi
  echo "test-tools: $lane $status ($(cat "$logs/$lane.seconds") s)"
done
exit "$failed"
