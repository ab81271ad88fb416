#!/usr/bin/env bash
# Builds (once) a real Kubernetes control plane (kube-apiserver, etcd and, for
# Deployments that become Ready, kube-controller-manager, kube-scheduler and the
# kwok fake kubelet) plus the pulumi-kubernetes provider plugin, for offline
# tests, and prints the directory to put on PATH. See
# /work/shared/design/kubernetes-notes.md. Nothing is downloaded except Go
# modules from the proxy (and, if installable, Debian's etcd-server package);
# everything is cached outside the clone keyed by version, so a fresh CI clone
# on the same machine reuses it. tests/kube starts the binaries from $CACHE/bin.
#
# usage: .ci/kube-tools.sh [apiserver|controllers|etcd|kwok-and-plugin|all]
#   ETCD_FROM=auto|debian|source  (auto: Debian's etcd-server if installable, else build)
#
# measured cold on a shared 2-core machine (other engineers compiling, load 4-7;
# module cache cold for these modules, Go build cache warm only from the pulumi
# CLI build of .ci/tools.sh), `nice -n 19 .ci/kube-tools.sh all`, 18.7 min:
#   etcd (apt-get install etcd-server 3.4.23)          4 s
#   kube-apiserver v1.34.1 (incl. tidy + downloads)  299 s   (102 MB)
#   kube-controller-manager + kube-scheduler         148 s   (93 + 73 MB)
#   kwok v0.7.0                                      185 s   (67 MB)
#   pulumi-resource-kubernetes (label 4.32.0)        486 s   (167 MB)
#   kwok and the plugin are built together now (build_kwok_and_plugin): from an
#   empty build cache 731 CPU-seconds, against 179 + 703 built apart (2026-12-06)
#   etcd v3.6.4 from source (ETCD_FROM=source, after the above) 13 s (26 MB)
#   everything cached: 0.04 s
# The notes' figures (apiserver ~24 min, plugin ~20 min) were on a busier
# machine; allow for that in CI limits.
set -Eeuo pipefail
shopt -s inherit_errexit
trap 'echo "kube-tools: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

K8S_VERSION=${K8S_VERSION:-1.34.1}
ETCD_VERSION=${ETCD_VERSION:-3.6.4}
ETCD_FROM=${ETCD_FROM:-auto}
KWOK_VERSION=${KWOK_VERSION:-0.7.0}
# The provider module is served only at this pseudo-version (commit 2026-01-15).
K8S_PROVIDER_VERSION=${K8S_PROVIDER_VERSION:-v4.0.0-20260115033456-f47bc2d6f199}
K8S_PROVIDER_SDK_VERSION=${K8S_PROVIDER_SDK_VERSION:-4.24.0}
# The version the component's SDK (pulumi-kubernetes/sdk/v4 v4.32.0) asks the
# engine for; the served code is the commit above whatever the label says.
K8S_PLUGIN_LABEL=${K8S_PLUGIN_LABEL:-4.32.0}

CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
BIN="$CACHE/bin"
mkdir -p "$BIN"

log() { echo "kube-tools: $*" >&2; }

# Scratch modules live under one directory made here, in the main shell, and
# removed on exit, also when a build fails (builds run in subshells, which
# neither share variables nor run the EXIT trap).
SCRATCH_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/kube-tools.XXXXXX")
trap 'rm -rf "$SCRATCH_ROOT"' EXIT
scratch() { mktemp -d "$SCRATCH_ROOT/build.XXXXXX"; }

# publish moves a finished $out.tmp into place in one rename, so an interrupted
# build never leaves a half-written binary where the skip check looks.
publish() {
  local out=$1
  rm -rf "$out"
  mv "$out.tmp" "$out"
}

# k8s_module writes, in the current directory, a scratch module that requires
# k8s.io/kubernetes and replaces every staging repo named in the kubernetes
# module's own go.mod (./staging/src/k8s.io/X) by its published k8s.io/X
# v0.<minor>.<patch>, plus a tools.go importing the given main packages.
k8s_module() {
  local staging="v0.${K8S_VERSION#1.}"
  GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" > dl.json
  local gomod; gomod=$(sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p' dl.json)
  [ -f "$gomod" ] || { log "no go.mod for k8s.io/kubernetes@v$K8S_VERSION"; cat dl.json >&2; return 1; }
  local godirective godebug replaces
  godirective=$(sed -n 's/^go \(.*\)$/\1/p' "$gomod")
  godebug=$(grep '^godebug ' "$gomod" || true)
  replaces=$(sed -n "s#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\t\1 => \1 $staging#p" "$gomod")
  local n; n=$(printf '%s\n' "$replaces" | grep -c .)
  [ "$n" -gt 0 ] || { log "found no staging replace lines in $gomod"; return 1; }
  log "k8s.io/kubernetes v$K8S_VERSION: $n staging repos -> $staging"
  {
    printf 'module tools/kubernetes\n\ngo %s\n\n%s\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n%s\n)\n' \
      "$godirective" "$godebug" "$K8S_VERSION" "$replaces"
  } > go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    local p; for p in "$@"; do printf '\t_ "%s"\n' "$p"; done
    printf ')\n'
  } > tools.go
  GOFLAGS=-mod=mod go mod tidy >&2
}

# k8s_ldflags stamps the version into both version packages; without it the
# server reports a bogus version that clients (pulumi-kubernetes) trip over.
k8s_ldflags() {
  local major=${K8S_VERSION%%.*} rest=${K8S_VERSION#*.}
  local minor=${rest%%.*} flags="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$flags"
}

# build_k8s <outdir> <cmd...> builds k8s.io/kubernetes/cmd/<cmd> into outdir.
build_k8s() {
  local out=$1; shift
  local have=1 c
  for c in "$@"; do [ -x "$out/$c" ] || have=0; done
  if [ "$have" = 1 ]; then echo "$out"; return; fi
  log "building $* v$K8S_VERSION (cold: 5-25 min for kube-apiserver, the others +2-7 min)"
  local work pkgs=() ldflags
  work=$(scratch)
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  ldflags=$(k8s_ldflags)
  (
    cd "$work"
    k8s_module "${pkgs[@]}"
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    for c in "$@"; do
      CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/$c" \
        -ldflags "$ldflags" "k8s.io/kubernetes/cmd/$c" >&2
    done
  )
  publish "$out"
  echo "$out"
}

build_apiserver() { build_k8s "$CACHE/kube-apiserver-v$K8S_VERSION" kube-apiserver; }
build_controllers() {
  build_k8s "$CACHE/kube-controllers-v$K8S_VERSION" kube-controller-manager kube-scheduler
}

# etcd_debian_version prints the installed etcd-server package version, if any.
etcd_debian_version() {
  command -v dpkg-query > /dev/null || return 0
  { dpkg-query -W -f='${Status} ${Version}\n' etcd-server 2> /dev/null || true; } |
    awk '$3 == "installed" { print $4 }'
}

# try_etcd_debian installs Debian's etcd-server if it is not installed yet
# (root only; policy-rc.d keeps the service from starting) and prints its
# version, or nothing when that is not possible.
try_etcd_debian() {
  local v; v=$(etcd_debian_version)
  if [ -z "$v" ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    log "trying apt-get install etcd-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q etcd-server >&2 ||
      { apt-get update -q >&2 && apt-get install -y -q etcd-server >&2; } ||
      log "apt-get install etcd-server failed"
    v=$(etcd_debian_version)
  fi
  if [ -n "$v" ] && [ -x /usr/bin/etcd ]; then echo "$v"; fi
}

# build_etcd prefers Debian's etcd-server (just a symlink to /usr/bin/etcd,
# keyed by the package version) and otherwise builds go.etcd.io/etcd/server/v3,
# whose root package is the etcd main.
build_etcd() {
  if [ "$ETCD_FROM" != source ]; then
    local v; v=$(try_etcd_debian)
    if [ -n "$v" ]; then
      local out="$CACHE/etcd-debian-$v"
      mkdir -p "$out"
      ln -sfn /usr/bin/etcd "$out/etcd"
      log "etcd: Debian etcd-server $v (/usr/bin/etcd)"
      echo "$out"
      return
    fi
    if [ "$ETCD_FROM" = debian ]; then log "etcd-server package not available"; return 1; fi
    log "etcd: Debian etcd-server not available, building from source"
  fi
  local out="$CACHE/etcd-v$ETCD_VERSION"
  if [ -x "$out/etcd" ]; then echo "$out"; return; fi
  log "building etcd v$ETCD_VERSION (cold: 1-2 min)"
  local work; work=$(scratch)
  (
    cd "$work"
    printf 'module tools/etcd\n\ngo 1.24\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD_VERSION" > go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
    GOFLAGS=-mod=mod go mod tidy >&2
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/etcd" -ldflags "-s -w" \
      go.etcd.io/etcd/server/v3 >&2
  )
  publish "$out"
  echo "$out"
}

# build_kwok_and_plugin compiles kwok and pulumi-resource-kubernetes in one
# scratch module and one `go build`. Built apart, each compiled its own
# k8s.io/api, apimachinery and client-go (kwok at v0.33.0, the plugin at
# v0.33.3), about 40 of kwok's 43 MB of Go source being packages the plugin
# compiles too; together every shared package is compiled once, at the
# highest version either requires (k8s.io v0.33.3 for kwok, a patch release).
# (The control plane's v0.34 cannot be shared the same way: kwok v0.7.0 does
# not compile against apimachinery v0.34, and kwok v0.8.0 requires v0.36.)
#
# The plugin: `go install` refuses the provider module (it has a replace
# directive) and its own main embeds files made by `go generate` that the
# module zip lacks, so this builds an own main that embeds the module's
# schema.json (top-level "version" set to the label, as the module's
# generate.go does) and terraform-mapping.json.
build_kwok_and_plugin() {
  local out="$CACHE/kwok-v$KWOK_VERSION-pulumi-kubernetes-$K8S_PLUGIN_LABEL"
  local source="sigs.k8s.io/kwok@v$KWOK_VERSION github.com/pulumi/pulumi-kubernetes/provider/v4@$K8S_PROVIDER_VERSION"
  if [ -x "$out/kwok" ] && [ -x "$out/pulumi-resource-kubernetes" ] &&
    [ "$(cat "$out/SOURCE" 2> /dev/null)" = "$source" ]; then
    echo "$out"
    return
  fi
  log "building kwok v$KWOK_VERSION and pulumi-resource-kubernetes $K8S_PLUGIN_LABEL from $K8S_PROVIDER_VERSION (cold: 8-20 min)"
  local work; work=$(scratch)
  (
    cd "$work"
    cat > go.mod << MOD
module tools/kwok-and-pulumi-resource-kubernetes

go 1.24.7

require (
	github.com/pulumi/pulumi-kubernetes/provider/v4 $K8S_PROVIDER_VERSION
	github.com/pulumi/pulumi-kubernetes/sdk/v4 v$K8S_PROVIDER_SDK_VERSION
	sigs.k8s.io/kwok v$KWOK_VERSION
)
MOD
    cat > tools.go << 'SRC'
//go:build tools

package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
SRC
    GOFLAGS=-mod=mod go mod download -json "github.com/pulumi/pulumi-kubernetes/provider/v4@$K8S_PROVIDER_VERSION" > dl.json
    local dir; dir=$(sed -n 's/^\t"Dir": "\(.*\)",$/\1/p' dl.json)
    [ -f "$dir/cmd/pulumi-resource-kubernetes/schema.json" ] ||
      { log "no schema.json in $dir"; cat dl.json >&2; return 1; }
    mkdir pulumi-resource-kubernetes setversion
    cp "$dir/cmd/pulumi-resource-kubernetes/schema.json" "$dir/cmd/pulumi-resource-kubernetes/terraform-mapping.json" \
      pulumi-resource-kubernetes/
    chmod u+w pulumi-resource-kubernetes/*.json
    cat > setversion/main.go << 'SRC'
// Sets the top-level "version" of a schema.json, as the module's generate.go does.
package main

import (
	"encoding/json"
	"os"
)

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(raw, &spec); err != nil {
		panic(err)
	}
	v, _ := json.Marshal(os.Args[2])
	spec["version"] = v
	out, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(os.Args[1], out, 0o644); err != nil {
		panic(err)
	}
}
SRC
    cat > pulumi-resource-kubernetes/main.go << 'SRC'
// pulumi-resource-kubernetes built from the published provider module.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema.json
var pulumiSchema []byte

//go:embed terraform-mapping.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
SRC
    GOFLAGS=-mod=mod go run ./setversion pulumi-resource-kubernetes/schema.json "$K8S_PLUGIN_LABEL" >&2
    rm -r setversion
    GOFLAGS=-mod=mod go mod tidy >&2
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp/" \
      -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$K8S_PLUGIN_LABEL" \
      sigs.k8s.io/kwok/cmd/kwok ./pulumi-resource-kubernetes >&2
    echo "$source" > "$out.tmp/SOURCE"
  )
  publish "$out"
  echo "$out"
}

link() { ln -sfn "$1" "$BIN/$(basename "$1")"; }

# part <name> runs one build (directory assignment keeps errexit effective)
# and links its binaries into $BIN.
part() {
  local start=$SECONDS dir
  case "$1" in
    apiserver) dir=$(build_apiserver); link "$dir/kube-apiserver" ;;
    controllers)
      dir=$(build_controllers)
      link "$dir/kube-controller-manager"
      link "$dir/kube-scheduler"
      ;;
    etcd) dir=$(build_etcd); link "$dir/etcd" ;;
    kwok-and-plugin)
      dir=$(build_kwok_and_plugin)
      link "$dir/kwok"
      link "$dir/pulumi-resource-kubernetes"
      ;;
  esac
  log "$1: $dir ($((SECONDS - start)) s)"
}

case "${1:-all}" in
  apiserver | controllers | etcd | kwok-and-plugin) part "$1" ;;
  all) for p in etcd apiserver controllers kwok-and-plugin; do part "$p"; done ;;
  *)
    echo "usage: $0 [apiserver|controllers|etcd|kwok-and-plugin|all]" >&2
    exit 2
    ;;
esac
echo "$BIN"
