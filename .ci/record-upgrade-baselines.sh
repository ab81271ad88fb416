#!/usr/bin/env bash
# Records the provider upgrade tests' baselines (tests/engine/upgrade_test.go,
# docs/releases.md): builds the plugin of the baseline release from its commit
# (a `git archive` of it, built with the Makefile's flags and the release's
# version), removes the recorded states and gRPC logs, and runs
# TestProviderUpgrade with that plugin, which deploys each program with it to
# the emulator, writes what providertest records, then previews today's plugin
# over it. Expected-diff files are kept. Needs the test tools
# (`make test-tools`) and the commit in this clone's history.
#
#   .ci/record-upgrade-baselines.sh <commit> <version> [go test flags, e.g. -v]
set -euo pipefail

commit=${1:?usage: $0 <commit> <version> [go test flags]}
version=${2:?usage: $0 <commit> <version> [go test flags]}
shift 2
root=$(git rev-parse --show-toplevel)
module=github.com/openinspect/pulumi-openinspect

if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "record-upgrade-baselines: commit $commit is not in this clone's history (fetch it first)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/bin"
git -C "$root" archive "$commit" | tar -x -C "$work/src"
echo "record-upgrade-baselines: building the plugin of $version from $commit" >&2
(
  cd "$work/src"
  CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $module/provider.Version=$version" \
    -o "$work/bin/pulumi-resource-openinspect" ./provider/cmd/pulumi-resource-openinspect
)

recorded="$root/tests/engine/testdata/recorded/TestProviderUpgrade"
if [ -d "$recorded" ]; then
  find "$recorded" -path "*/$version/*" \( -name stack.json -o -name grpc.json -o -name fixture.sha256 \) -delete
fi

cd "$root"
OPENINSPECT_UPGRADE_BASELINE_PLUGIN="$work/bin" OPENINSPECT_UPGRADE_BASELINE_VERSION="$version" \
  go test -vet=off -count=1 -timeout 60m "$@" -run '^TestProviderUpgrade$' ./tests/engine/
