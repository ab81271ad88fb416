#!/usr/bin/env bash
# Builds (once) everything the tests start, in three lanes at the same time:
# the pulumi toolchain and staticcheck, the Kubernetes control plane and the
# pulumi-kubernetes plugin, and the registry installs (Python venv, npm
# packages, wrangler, Alchemy, workerd, Debian's chromium, bubblewrap and slirp4netns, OpenCode). Cold, every lane is mostly
# compiling or downloading, and one lane alone leaves a core idle while it
# links or fetches; side by side they finish minutes sooner on two cores.
# Each lane's output is kept apart and printed when the lane ends, so the log
# reads as three blocks, not an interleaving. Cached, the whole script takes
# well under a second.
#
# usage: .ci/test-tools.sh                   every lane, then return
#        .ci/test-tools.sh --behind LANE     the other lanes, then return while
#                                            LANE keeps building (make test)
#        .ci/test-tools.sh --wait LANE       wait for a lane left behind, print
#                                            its log, fail when it failed
#        .ci/test-tools.sh --report LANE     the same without waiting (after a
#                                            failed test run)
# A lane left behind records itself in $CACHE/lanes/: LANE.pid while it runs,
# then LANE.status ("ready" or "FAILED") and LANE.log. The tests that need it
# wait for it (tests/toolchain.WaitForLane: only the tests that start a
# Kubernetes control plane), so vet, staticcheck and every other test run
# while the longest lane is still compiling.
set -uo pipefail
cd "$(dirname "$0")/.."

CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
lanedir="$CACHE/lanes"
mkdir -p "$lanedir"

lane_pulumi() {
  ./.ci/tools.sh all && ./.ci/tools.sh staticcheck
}
lane_kubernetes() {
  local part
  for part in etcd apiserver controllers kwok-and-plugin; do
    ./.ci/kube-tools.sh "$part" || return
  done
}
lane_registries() {
  ./.ci/python-tools.sh && ./.ci/node-tools.sh && ./.ci/wrangler-tools.sh && ./.ci/alchemy-tools.sh &&
    ./.ci/workerd-tools.sh && ./.ci/browser-tools.sh && ./.ci/opencode-tools.sh >/dev/null &&
    ./.ci/sandbox-tools.sh >/dev/null
}

# run_lane LANE LOG runs one lane, writing its output to LOG and its seconds
# to LOG.seconds; its exit status is the lane's.
run_lane() {
  local start rc
  start=$(date +%s)
  "lane_$1" >"$2" 2>&1 </dev/null
  rc=$?
  echo $(($(date +%s) - start)) >"$2.seconds"
  return "$rc"
}

# report LANE LOG STATUS prints a lane's block: its output unless it was
# cached (it ended within the second and has nothing to show), then one line.
report() {
  if [ "$3" = FAILED ] || [ "$(cat "$2.seconds" 2>/dev/null || echo 1)" -gt 0 ]; then
    sed "s/^/  /" "$2"
  fi
  echo "test-tools: $1 $3 ($(cat "$2.seconds" 2>/dev/null || echo '?') s)"
}

# lane_running LANE: a lane left behind is still building.
lane_running() {
  local pid
  pid=$(cat "$lanedir/$1.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null
}

# report_behind LANE reports a finished lane left behind, as its status
# file says (none: it was built before, ready); fails unless it is ready.
report_behind() {
  local status
  status=$(cat "$lanedir/$1.status" 2>/dev/null || echo ready)
  if [ -f "$lanedir/$1.log" ]; then report "$1" "$lanedir/$1.log" "$status"; fi
  [ "$status" = ready ]
}

behind=
case "${1:-}" in
  --wait)
    lane=${2:?usage: $0 --wait LANE}
    if lane_running "$lane"; then echo "test-tools: waiting for the $lane lane"; fi
    while lane_running "$lane"; do sleep 2; done
    report_behind "$lane"
    exit
    ;;
  --report)
    # What `make test` prints when the tests failed: a lane still building
    # is left to build; a finished one is reported as --wait would.
    lane=${2:?usage: $0 --report LANE}
    if lane_running "$lane"; then
      echo "test-tools: the $lane lane is still building (log: $lanedir/$lane.log)"
      exit 0
    fi
    report_behind "$lane" || true
    exit 0
    ;;
  --behind) behind=${2:?usage: $0 --behind LANE} ;;
  "") ;;
  *) echo "usage: $0 [--behind LANE | --wait LANE | --report LANE]" >&2; exit 2 ;;
esac

lanes=(pulumi kubernetes registries)
for lane in "${lanes[@]}"; do
  [ "$lane" = "$behind" ] || continue
  if lane_running "$lane"; then
    echo "test-tools: the $lane lane is already building (pid $(cat "$lanedir/$lane.pid"))"
    continue
  fi
  rm -f "$lanedir/$lane.status" "$lanedir/$lane.log" "$lanedir/$lane.log.seconds"
  # Detached from this script's output, so whoever reads it (make, CI) sees
  # its end when the other lanes are ready; its state goes to $lanedir.
  (
    echo "$BASHPID" >"$lanedir/$lane.pid"
    if run_lane "$lane" "$lanedir/$lane.log"; then status=ready; else status=FAILED; fi
    echo "$status" >"$lanedir/$lane.status"
    rm -f "$lanedir/$lane.pid"
  ) </dev/null >/dev/null 2>&1 &
  # Return only once the lane is visible to the tests (running or done).
  until [ -f "$lanedir/$lane.pid" ] || [ -f "$lanedir/$lane.status" ]; do sleep 0.05; done
  echo "test-tools: the $lane lane builds behind the tests (log: $lanedir/$lane.log)"
done

logs=$(mktemp -d "${TMPDIR:-/tmp}/test-tools.XXXXXX")
trap 'rm -rf "$logs"' EXIT
declare -A pids
for lane in "${lanes[@]}"; do
  [ "$lane" != "$behind" ] || continue
  rm -f "$lanedir/$lane.status" # built here, not behind: nothing to wait for
  run_lane "$lane" "$logs/$lane.log" &
  pids[$lane]=$!
done

failed=0
for lane in "${lanes[@]}"; do
  [ "$lane" != "$behind" ] || continue
  if wait "${pids[$lane]}"; then status=ready; else status=FAILED; failed=1; fi
  report "$lane" "$logs/$lane.log" "$status"
done
exit "$failed"
