#!/usr/bin/env bash
# Prepares (once) a virtualenv with the Pulumi Python SDK the generated
# Python SDK runs on and Cloudflare's Python SDK the conformance suite
# (tests/conformance) drives the emulator with, from PyPI, cached outside the
# clone keyed by the pinned versions; prints the venv's directory.
set -euo pipefail

PULUMI_PY_VERSION=${PULUMI_PY_VERSION:-3.272.0}
CLOUDFLARE_PY_VERSION=${CLOUDFLARE_PY_VERSION:-5.9.0}
CACHE=${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
# setuptools and wheel build the generated SDK, installed per test run.
# cloudflare brings httpx and pydantic, which pulumi does not use.
requirements="pulumi==$PULUMI_PY_VERSION semver==3.0.4 setuptools==84.2.1 wheel==0.48.0 cloudflare==$CLOUDFLARE_PY_VERSION"
key=$(printf '%s' "$requirements" | sha256sum | cut -c1-12)
out="$CACHE/python-deps-$key"
if [ -x "$out/bin/python" ]; then echo "$out"; exit 0; fi

mkdir -p "$CACHE"
rm -rf "$out.tmp"
echo "python-tools: creating $out ($requirements)" >&2
python3 -m venv "$out.tmp" >&2
# pip bakes the venv's path into its scripts, so install where it will live.
mv "$out.tmp" "$out.build"
trap 'rm -rf "$out.build"' ERR
# shellcheck disable=SC2086
"$out.build/bin/python" -m pip install --quiet --disable-pip-version-check $requirements >&2
mv "$out.build" "$out"
echo "$out"
