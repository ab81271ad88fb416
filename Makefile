# openinspect: a native Pulumi provider for Open-Inspect installations.
SHELL       := /bin/bash
# The version dev builds and the committed SDKs carry; releases set VERSION.
VERSION     ?= $(shell cat VERSION)
MODULE      := github.com/openinspect/pulumi-openinspect
LDFLAGS     := -s -w -X $(MODULE)/provider.Version=$(VERSION)
BIN         := $(CURDIR)/bin
TOOLS_BIN   := $(or $(OPENINSPECT_TOOLS_CACHE),$(HOME)/.cache/openinspect-tools)/bin
export PATH := $(BIN):$(TOOLS_BIN):$(PATH)
GO_TEST_FLAGS ?= -timeout 60m
# One build configuration for every compile here (tests, vet, staticcheck, the
# plugin and emulator the tests build, the release's -trimpath build): Go's
# build cache keys on CGO_ENABLED and -trimpath, so mixing them compiles every
# dependency again, minutes each from an empty cache. Nothing here uses cgo
# (the emulator's SQLite is modernc.org/sqlite); tests find the repository
# from their working directory (internal/reporoot), not from runtime.Caller.
# -ldflags=-w links without DWARF (a build that sets -ldflags itself, as the
# plugin's does, overrides it): nothing here runs a debugger, and each of the
# ~50 test binaries links about a third faster (a large one 9.8 s of CPU -> 6.4
# s), minutes of a cold CI run on two cores.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -ldflags=-w $(GOFLAGS)

.PHONY: bench all build provider emulator tools pulumi-tools kube-tools test-tools demo-tools schema sdks generate test test-unit fuzz fuzz-unguided bench-side-by-side lint demo local-cloud clean sync-upstream record-upgrade-baselines

all: build

build: provider emulator

# PIN_DIR (a directory holding contract.json and UPSTREAM_COMMIT) links a
# plugin that reads its upstream pin from there at start instead of the
# embedded one: a plugin at another pin, without touching third_party
# (docs/releases.md). Only the link differs.
PIN_LDFLAGS := $(if $(PIN_DIR),-X $(MODULE)/third_party/background-agents.pinDir=$(abspath $(PIN_DIR)))

provider:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS) $(PIN_LDFLAGS)" -o $(BIN)/pulumi-resource-openinspect ./provider/cmd/pulumi-resource-openinspect

emulator:
	CGO_ENABLED=0 go build -trimpath -o $(BIN)/openinspect-emulator ./tests/emulator/cmd/openinspect-emulator

# The pulumi CLI, the YAML language plugin, a Kubernetes control plane and the
# pulumi-kubernetes plugin, built from the Go module proxy (and Debian's etcd)
# and cached outside the clone (see .ci/tools.sh and .ci/kube-tools.sh).
tools: pulumi-tools kube-tools

pulumi-tools:
	./.ci/tools.sh all

kube-tools:
	./.ci/kube-tools.sh all

# What the tests start: the pulumi toolchain, staticcheck, the control plane
# and the pulumi-kubernetes plugin (labelled 4.32.0, the version the
# component's SDK asks for), which the web UI's engine test deploys through,
# and the Python, npm and wrangler installs and Debian's chromium (apt-get,
# about 15 s); built side by side in three lanes
# (.ci/test-tools.sh). The plugin is the longest cold build (8-20 min); cached,
# every part takes well under a second.
test-tools:
	./.ci/test-tools.sh

schema:
	go run ./provider/cmd/openinspect-gen schema -out schema.json

sdks:
	go run ./provider/cmd/openinspect-gen sdks -schema schema.json -out sdk -version $(VERSION)

generate: schema sdks

# staticcheck is built once from the Go module proxy and cached (.ci/tools.sh).
lint:
	@test -z "$$(gofmt -l provider tests)" || (gofmt -l provider tests; exit 1)
	go vet ./...
	./.ci/tools.sh staticcheck >/dev/null
	staticcheck ./...

# Every tier that runs offline: unit, provider, emulator and engine tests;
# then each fuzz target for a bounded number of executions, unguided, from
# the test binaries `go test` compiled (their seed corpora also run as plain
# tests there; `make fuzz` is the guided run). `go test` and the fuzz
# binaries skip their own vet (-vet=off): `make lint` has just run every
# analyzer over the same packages, and go test's subset keys its facts
# apart, so it would analyse the whole dependency closure again.
# The Kubernetes lane, the longest cold build, keeps building behind lint
# and the tests; only the tests that start a control plane wait for it, and
# the run fails if it failed (its log is printed then, also when the tests
# failed first).
test:
	./.ci/test-tools.sh --behind kubernetes
	$(MAKE) lint
	go test -vet=off $(GO_TEST_FLAGS) ./... || { ./.ci/test-tools.sh --report kubernetes; exit 1; }
	./.ci/test-tools.sh --wait kubernetes
	$(MAKE) fuzz-unguided
	$(MAKE) bench-side-by-side

# Every fuzz target, coverage-guided, for a fixed number of executions
# (.ci/fuzz.sh says why counts, not durations; FUZZSCALE multiplies them).
# `make test` runs the same targets unguided instead (larger budgets): Go
# instruments a guided target's whole dependency closure, which for the
# provider's packages is a second compile of the provider (about 13 of CI's
# CPU-minutes cold, docs/benchmarks.md).
FUZZSCALE ?= 1
fuzz:
	FUZZSCALE=$(FUZZSCALE) ./.ci/fuzz.sh guided

fuzz-unguided:
	FUZZSCALE=$(FUZZSCALE) ./.ci/fuzz.sh unguided

# Numbers, not assertions: API calls per operation and time, on this machine;
# then the provider's request path and wrangler side by side (a table).
bench: provider
	go test -run '^$$' -bench . -benchtime 20x ./provider/...
	$(MAKE) bench-side-by-side
	go test -run '^$$' -bench LocalRuntime -benchtime 5x ./tests/engine/
	go test -run '^$$' -bench Fleet -benchtime 1x -timeout 60m ./tests/engine/
	go test -run '^$$' -bench Session -benchtime 3x -timeout 30m ./tests/engine/

# The provider beside wrangler on one emulator: a printed table, no timed
# assertion; `make test` runs it once (under a minute) so CI shows it still
# works. Its full-installation row runs the plugin built here (bin/).
bench-side-by-side: provider
	./.ci/wrangler-tools.sh >/dev/null
	go test -run '^$$' -bench SideBySide -benchtime 1x ./tests/wrangler/

test-unit:
	go test -short ./provider/... ./tests/emulator/...

# The release the provider upgrade tests start from (docs/releases.md): each
# program's state as this release's plugin left it, recorded under
# tests/engine/testdata/recorded/TestProviderUpgrade and committed. This
# builds that plugin from the commit and records the baselines again.
UPGRADE_BASELINE_VERSION := 0.1.0
UPGRADE_BASELINE_COMMIT  := 18bfa1733edc2f802df781942c917fa2299b9efa

# The recording needs the pulumi toolchain (the sandbox builders' environments
# the plugin makes itself, in the tools cache, as the engine tests do).
record-upgrade-baselines:
	./.ci/tools.sh all >/dev/null
	./.ci/record-upgrade-baselines.sh $(UPGRADE_BASELINE_COMMIT) $(UPGRADE_BASELINE_VERSION)

# What the demo's script starts besides this project's binaries: the pulumi
# CLI and its YAML plugin, and workerd, which runs the deployed scripts in the
# emulator (from npm, about 3 s cold). The Modal CLI the provider deploys the
# sandbox app with is installed by the provider itself, into cacheDir.
demo-tools: pulumi-tools
	./.ci/workerd-tools.sh >/dev/null

# The main job: a full installation deployed to the local emulator, offline.
demo: demo-tools build
	OPENINSPECT_BIN_DIR=$(BIN) ./examples/run-local.sh

# The demo, then the local cloud keeps serving the installation (what answers
# where is printed) until Ctrl-C.
local-cloud: demo-tools build
	OPENINSPECT_DEMO_STAY_UP=1 OPENINSPECT_BIN_DIR=$(BIN) ./examples/run-local.sh

# Move the upstream pin: derive third_party/background-agents/contract.json
# from upstream at COMMIT in the git checkout SOURCE (with the decisions file
# beside it), write it and UPSTREAM_COMMIT, and print the change report.
# Refuses, writing nothing, while a new fact is undecided (docs/releases.md,
# "Moving the pin").
sync-upstream:
	@test -n "$(COMMIT)" -a -n "$(SOURCE)" || (echo "usage: make sync-upstream COMMIT=<sha> SOURCE=<upstream git checkout>"; exit 2)
	go run ./provider/cmd/openinspect-sync -source "$(SOURCE)" -commit "$(COMMIT)"

clean:
	rm -rf $(BIN) .demo dist
