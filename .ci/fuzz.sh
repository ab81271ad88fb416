#!/usr/bin/env bash
# Runs every fuzz target for a fixed number of executions, in one of two ways:
#
#   .ci/fuzz.sh guided     `go test -fuzz`: coverage-guided (`make fuzz`). Go
#                          instruments every package of the target's closure,
#                          so the first target of the provider's closure
#                          compiles it all a second time (about 13 CPU-minutes
#                          from an empty build cache on this project's CI).
#   .ci/fuzz.sh unguided   the test binary `go test` has just compiled (only a
#                          link: -vet=off and the same GOFLAGS make every
#                          compile a cache hit) mutates each target's seeds
#                          without coverage guidance (`make test`). Go's fuzz
#                          engine runs that way when the binary has no
#                          instrumentation, and says so in a warning line.
#
# Either way a failing input is written to the package's testdata/fuzz/, as
# `go test -fuzz` does, and both share Go's fuzz cache. Budgets are execution
# counts (about 20 s each guided here): a duration budget (-fuzztime 20s) can
# fail a clean run with "context deadline exceeded" on a loaded machine, a
# race in Go's fuzz coordinator (golang/go#75804, fixed in Go 1.27).
# FUZZSCALE multiplies every count.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:?usage: .ci/fuzz.sh guided|unguided}
scale=${FUZZSCALE:-1}

# package, target, executions guided and unguided at FUZZSCALE=1. An
# unguided execution costs less (no coverage to record and compare), so its
# budget is larger, about 10 s each here.
targets=(
  "./provider/installation FuzzValidation 1500 15000"
  "./provider/installation FuzzUpstreamGates 1500 15000"
  "./provider/installation FuzzInputRules 1500 10000"
  "./provider/cloudflare FuzzParseMigrations 8000 800000"
  "./provider/internal/cloudflare/cfapi FuzzMultipartBody 40000 200000"
  "./provider/esm FuzzScan 400000 800000"
  "./provider/installation/webbuild FuzzSubstitute 15000 15000"
)

bins=$(mktemp -d "${TMPDIR:-/tmp}/openinspect-fuzz.XXXXXX")
trap 'rm -rf "$bins"' EXIT
fuzzcache="$(go env GOCACHE)/fuzz"

for entry in "${targets[@]}"; do
  read -r pkg target guided unguided <<<"$entry"
  case "$mode" in
  guided)
    execs=$((guided * scale))
    go test -vet=off -run '^$' -fuzz "^$target\$" -fuzztime "${execs}x" "$pkg"
    ;;
  unguided)
    execs=$((unguided * scale))
    importpath=$(go list "$pkg")
    bin="$bins/${importpath//\//_}.test"
    [ -x "$bin" ] || go test -vet=off -c -o "$bin" "$pkg"
    # Run where `go test` runs it, the package's directory: the seeds in
    # testdata/fuzz are read from there and a failing input is written there.
    echo "fuzz (unguided): $target, $execs executions ($importpath)"
    (cd "$pkg" && "$bin" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "${execs}x" \
      -test.fuzzcachedir "$fuzzcache/$importpath" -test.timeout 10m)
    ;;
  *)
    echo "fuzz.sh: unknown mode $mode (guided or unguided)" >&2
    exit 2
    ;;
  esac
done
