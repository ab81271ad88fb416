#!/usr/bin/env bash
# Builds (once) the offline toolchain the engine-level tests and the linter
# need and prints the directory to put on PATH. Nothing is downloaded except Go
# modules from the proxy: the pulumi CLI, the YAML language plugin and
# staticcheck are compiled from their published modules, and cached outside the
# clone keyed by version, so a fresh CI clone on the same machine reuses them.
set -euo pipefail

PULUMI_VERSION=${PULUMI_VERSION:-3.274.1}
PULUMI_YAML_VERSION=${PULUMI_YAML_VERSION:-1.25.0}
# honnef.co/go/tools v0.8.2 is staticcheck 2026.2.2, the newest the proxy
# serves; it is built with (and supports) Go 1.26.
STATICCHECK_VERSION=${STATICCHECK_VERSION:-0.8.2}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
BIN="$CACHE/bin"
mkdir -p "$BIN"

log() { echo "tools: $*" >&2; }

# build_pulumi compiles the CLI from github.com/pulumi/pulumi/pkg/v3. pkg's own
# go.mod replaces sdk with ../sdk (ignored outside its repo) and clipboard with
# a fork; the fork must be repeated here or the build fails.
build_pulumi() {
  local out="$CACHE/pulumi-v$PULUMI_VERSION"
  if [ -x "$out/pulumi" ]; then echo "$out"; return; fi
  log "building pulumi v$PULUMI_VERSION (cold: several minutes)"
  local work; work=$(mktemp -d)
  (
    cd "$work"
    cat > go.mod <<MOD
module tools/pulumi

go 1.26

require (
	github.com/pulumi/pulumi/pkg/v3 v$PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 v$PULUMI_VERSION
)

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
MOD
    cat > tools.go <<'SRC'
//go:build tools

package tools

import _ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
SRC
    GOFLAGS=-mod=mod go mod tidy >&2
    mkdir -p "$out.tmp"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/pulumi" \
      -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
      github.com/pulumi/pulumi/pkg/v3/cmd/pulumi >&2
  )
  rm -rf "$work" "$out"
  mv "$out.tmp" "$out"
  echo "$out"
}

# build_yaml compiles pulumi-language-yaml with the module's own requirements.
build_yaml() {
  local out="$CACHE/pulumi-yaml-v$PULUMI_YAML_VERSION"
  if [ -x "$out/pulumi-language-yaml" ]; then echo "$out"; return; fi
  log "building pulumi-language-yaml v$PULUMI_YAML_VERSION"
  local work; work=$(mktemp -d)
  (
    cd "$work"
    GOFLAGS=-mod=mod go mod download -json "github.com/pulumi/pulumi-yaml@v$PULUMI_YAML_VERSION" > dl.json
    local dir; dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' dl.json)
    cp -r "$dir" src && chmod -R u+w src
    cd src
    mkdir -p "$out.tmp"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/pulumi-language-yaml" \
      -ldflags "-s -w -X github.com/pulumi/pulumi-yaml/pkg/version.Version=v$PULUMI_YAML_VERSION" \
      ./cmd/pulumi-language-yaml >&2
  )
  rm -rf "$work" "$out"
  mv "$out.tmp" "$out"
  echo "$out"
}

# build_staticcheck compiles cmd/staticcheck with the module's own
# requirements, for `make lint`.
build_staticcheck() {
  local out="$CACHE/staticcheck-v$STATICCHECK_VERSION"
  if [ -x "$out/staticcheck" ]; then echo "$out"; return; fi
  log "building staticcheck v$STATICCHECK_VERSION"
  local work; work=$(mktemp -d)
  (
    cd "$work"
    GOFLAGS=-mod=mod go mod download -json "honnef.co/go/tools@v$STATICCHECK_VERSION" > dl.json
    local dir; dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' dl.json)
    cp -r "$dir" src && chmod -R u+w src
    cd src
    mkdir -p "$out.tmp"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/staticcheck" ./cmd/staticcheck >&2
  )
  rm -rf "$work" "$out"
  mv "$out.tmp" "$out"
  echo "$out"
}

link() { ln -sf "$1" "$BIN/$(basename "$1")"; }

case "${1:-all}" in
  pulumi) link "$(build_pulumi)/pulumi" ;;
  yaml) link "$(build_yaml)/pulumi-language-yaml" ;;
  staticcheck) link "$(build_staticcheck)/staticcheck" ;;
  all)
    link "$(build_pulumi)/pulumi"
    link "$(build_yaml)/pulumi-language-yaml"
    ;;
  *) echo "usage: $0 [pulumi|yaml|staticcheck|all]" >&2; exit 2 ;;
esac
echo "$BIN"
