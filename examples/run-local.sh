#!/usr/bin/env bash
# Deploys examples/yaml to the local cloud emulator, offline, and prints the
# stack outputs. State, emulator data and the Pulumi home live in .demo/, so a
# second run finds everything where the first left it (and changes nothing).
# OPENINSPECT_DEMO_STAY_UP=1 (make local-cloud) keeps the emulator serving
# the installation afterwards, printing what answers where, until Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Overridable so a test can run this script in a directory of its own with
# the binaries it built (tests/engine/demo_test.go).
demo=${OPENINSPECT_DEMO_DIR:-$root/.demo}
bin=${OPENINSPECT_BIN_DIR:-$root/bin}
mkdir -p "$demo/state" "$demo/home" "$demo/emulator"
# The cached pulumi CLI and its YAML plugin; this project's binaries are run
# from bin/ by path (the provider through the project's plugins entry below).
export PATH="${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}/bin:$PATH"
export PULUMI_HOME="$demo/home"
export PULUMI_BACKEND_URL="file://$demo/state"
# The demo's state holds only emulator credentials; a real stack uses a real passphrase or a KMS.
export PULUMI_CONFIG_PASSPHRASE="${PULUMI_CONFIG_PASSPHRASE:-openinspect-demo}"
export PULUMI_SKIP_UPDATE_CHECK=true

# reuse_listen FILE prints the address to listen on: the previous run's
# (host:port of the URL in FILE) when that port is free, since URLs in state
# point at it, else a free port.
reuse_listen() {
  local prev
  if [ -s "$1" ]; then
    prev=$(sed 's|^http://||' "$1")
    if ! (exec 3<>"/dev/tcp/${prev%:*}/${prev##*:}") 2>/dev/null; then echo "$prev"; return; fi
  fi
  echo 127.0.0.1:0
}
listen=$(reuse_listen "$demo/emulator.url")
# The web UI on a loopback port of its own, http://127.0.0.1:PORT, as
# `wrangler dev` serves a Worker: upstream's control plane accepts no other
# http origin as the web's (WEB_APP_URL), so sign-in needs it.
# open-inspect-web-demo is the web Worker's script name
# (<namePrefix>-web-<deploymentName>).
web_listen=$(reuse_listen "$demo/web.url")
rm -f "$demo/emulator.addr"
# A local cloud that stays up also fires the scripts' crons on schedule, and
# runs the sessions' sandboxes (under bubblewrap with slirp4netns, when both
# are installed: Debian's bubblewrap and slirp4netns packages), each image laid
# out once from the registries into the tool cache.
crons=()
sandboxes=()
if [ "${OPENINSPECT_DEMO_STAY_UP:-}" = 1 ]; then
  crons=(-run-crons)
  if command -v bwrap >/dev/null && command -v slirp4netns >/dev/null; then
    sandboxes=(-modal-sandboxes -modal-image-cache "${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}/modal-images")
  fi
fi
# The Modal app's web endpoints run its own code (api_create_sandbox makes a
# session's sandbox through the emulator's Modal API), in virtualenvs made from
# the Python the provider deploys with and kept in the tool cache.
"$bin/openinspect-emulator" -listen "$listen" -data-dir "$demo/emulator" -addr-file "$demo/emulator.addr" "${crons[@]}" "${sandboxes[@]}" \
  -local-origin "open-inspect-web-demo=$web_listen" \
  -modal-python auto -modal-runners "${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}/modal-runners" \
  > "$demo/emulator.log" 2>&1 &
emu_pid=$!
# Stopping waits for the emulator; a second Ctrl-C (or the TERM make passes
# on after its own) must not cut that wait short and leave it running.
trap 'trap "" INT TERM; kill "$emu_pid" 2>/dev/null; wait "$emu_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$demo/emulator.addr" ] && break; sleep 0.1; done
[ -s "$demo/emulator.addr" ] || { echo "emulator did not start; see $demo/emulator.log" >&2; exit 1; }
emu_url=$(cat "$demo/emulator.addr")
echo "$emu_url" > "$demo/emulator.url"
echo "emulator: $emu_url"
web_origin=$(curl -s "$emu_url/__emulator/local-origins" | sed -n 's/.*"open-inspect-web-demo": *"\([^"]*\)".*/\1/p')
[ -n "$web_origin" ] || { echo "the emulator gave the web UI no local origin; see $demo/emulator.log" >&2; exit 1; }
echo "$web_origin" > "$demo/web.url"

# A fresh copy of the example, keeping the demo stack's config from earlier
# runs. The engine takes pulumi-resource-openinspect from bin/ through the
# project file's plugins entry (Pulumi's way for a plugin under development):
# nothing is installed into the plugin cache, and nothing is found on $PATH.
mkdir -p "$demo/project"
cp -r "$root/examples/yaml/." "$demo/project/"
cd "$demo/project"
# The YAML language plugin likewise comes from the tool cache by path, so
# Pulumi prints no "using pulumi-language-yaml from $PATH" warning either.
yaml_plugin=$(command -v pulumi-language-yaml) || { echo "pulumi-language-yaml not found (run make pulumi-tools)" >&2; exit 1; }
printf '\nplugins:\n  providers:\n    - name: openinspect\n      path: %s\n  languages:\n    - name: yaml\n      path: %s\n' \
  "$bin" "$(dirname "$yaml_plugin")" >> Pulumi.yaml
pulumi stack select --create demo >/dev/null
pulumi config set openinspect:cloudflareApiBaseUrl "$emu_url/client/v4/"
pulumi config set openinspect:workersDevBaseUrl "http://*.workers.localhost:${emu_url##*:}"
pulumi config set webAppUrl "$web_origin"
# The emulator's default account, which its default token may access.
account=0f1e2d3c4b5a69788796a5b4c3d2e1f0
pulumi config set openinspect:cloudflareAccountId "$account"
pulumi config set --secret openinspect:cloudflareApiToken emulator-token
pulumi config set upstreamCheckout "$root/tests/fixtures/upstream"
# The sandbox side: the emulator's Modal, deployed with the real Modal CLI,
# which needs Python 3.12 or newer (upstream's app uses PEP 695 generics).
# The provider finds it as the tests do (provider/pyfind: OPENINSPECT_PYTHON,
# then PATH, then pyenv's under PYENV_ROOT, `pyenv root` and ~/.pyenv); a
# pythonPath an earlier version of this script kept is dropped.
pulumi config rm openinspect:pythonPath >/dev/null 2>&1 || true
pulumi config set openinspect:modalServerUrl "$emu_url"
pulumi config set --plaintext openinspect:modalTokenId ak-openinspect-emulator
pulumi config set --secret openinspect:modalTokenSecret as-openinspect-emulator
pulumi config set openinspect:cacheDir "${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}"
# A placeholder: the emulator's model stand-in answers the sessions' model
# calls (api.anthropic.com) and accepts only the key the installation seeded.
pulumi config set --secret anthropicApiKey demo-not-a-real-key
# The GitHub App's key pair, made once per demo stack by the emulator's
# GitHub stand-in as GitHub makes one ("Generate a private key"): the
# stand-in keeps the public half and checks the control plane's JWTs with
# it; the private key stays in .demo (0600) and the stack's secret config.
app_key="$demo/github-app-private-key.pem"
app_pub="$demo/github-app-public-key.pem"
if [ ! -s "$app_key" ] || [ ! -s "$app_pub" ]; then
  (umask 077; curl -fsS -X POST "$emu_url/__emulator/github/apps/123456/keys" -o "$app_key")
  curl -fsS "$emu_url/__emulator/github/apps/123456/public-key" -o "$app_pub"
fi
curl -fsS -X PUT --data-binary @"$app_pub" "$emu_url/__emulator/github/apps/123456/public-key"
pulumi config set --secret githubAppPrivateKey < "$app_key"
# Who may sign in: the active members of the stand-in's organization (its
# local user local-dev is one; outsider, invited only, is refused).
pulumi config set allowedGithubOrgs openinspect-local
# Keys nobody should reuse: made once per demo stack and kept in its config.
for key in browserAuthSecret tokenEncryptionKey repoSecretsEncryptionKey; do
  pulumi config get "$key" >/dev/null 2>&1 || pulumi config set --secret "$key" "$(head -c 32 /dev/urandom | base64)"
done
# As the README tells users: `pulumi up` previews, then updates. The outputs
# are printed once, below, not also by the update.
pulumi up --yes --suppress-progress --suppress-outputs
# The web UI runs on the emulator's Workers (webUrl is its workers.dev stand-in,
# http://<web worker>.workers.localhost:PORT, its own origin): ask it for its page.
web_url=$(pulumi stack output webUrl)
web_status=$(curl -s -o /dev/null -w '%{http_code}' "$web_url" || true)
echo
echo "web: GET $web_url answered ${web_status:-nothing}"
[ "$web_status" = 200 ] || { echo "the web UI did not answer; see $demo/emulator.log and the workers' logs in $demo/emulator/worker-logs/" >&2; exit 1; }
# Every output as JSON is kept in outputs.json; the screen shows them without
# upstreamVerification's per-file detail (upstream is its one-line summary).
pulumi stack output --json > "$demo/outputs.json"
echo
echo "outputs (with upstreamVerification's per-file detail: $demo/outputs.json):"
awk '/^  "upstreamVerification": \{$/ { skip = 1; next } skip && /^  \},?$/ { skip = 0; next } !skip' "$demo/outputs.json"

# OPENINSPECT_DEMO_STAY_UP=1 (`make local-cloud`): keep the local cloud
# serving the installation after the deploy, until Ctrl-C, instead of
# stopping the emulator with the script.
[ "${OPENINSPECT_DEMO_STAY_UP:-}" = 1 ] || exit 0
control_plane_url=$(pulumi stack output controlPlaneUrl)
echo
echo "local cloud: up until Ctrl-C; what answers where:"
echo "  emulator              $emu_url  (log: $demo/emulator.log)"
echo "  Cloudflare API        $emu_url/client/v4/"
echo "  Modal API             $emu_url"
# workerNames is a flat object of script names: "<worker> <script>" a line.
worker_names=$(pulumi stack output workerNames --json | sed -n 's/^ *"\([^"]*\)": *"\([^"]*\)",\{0,1\}$/\1 \2/p')
while read -r worker script; do
  printf '  worker %-14s %s\n' "$worker" "http://$script.workers.localhost:${emu_url##*:}"
done <<< "$worker_names"
echo "  web UI                $web_url"
github_url=$(curl -s "$emu_url/__emulator/github" | sed -n 's/.*"browser_url": *"\([^"]*\)".*/\1/p')
echo "  GitHub stand-in       $github_url  (its CA: $demo/emulator/github-ca.pem)"
echo "sign in: open $web_url, click \"Sign in with GitHub\" and sign in as local-dev on the stand-in's page"
echo "  (the first time, your browser warns that the stand-in's certificate is not trusted:"
echo "  Advanced, then Proceed; or trust the CA above); outsider is refused by the admission policy."
echo "  Every request the scripts and sandboxes make is answered here: curl $emu_url/__emulator/outbound"
if [ ${#sandboxes[@]} -gt 0 ]; then
  echo "run a session: on the dashboard, Start session on openinspect-local/hello-world; once the page says the"
  echo "  sandbox is ready (the first one lays out its image: minutes), type a prompt and Send. The sandbox runs"
  echo "  here (upstream's runtime command, the real OpenCode), the model stand-in's agent writes a note quoting"
  echo "  the prompt, commits and opens a pull request on the stand-in; the page shows it live and links it."
  echo "  Each sandbox's output: $demo/emulator/modal-sandboxes/<sandbox id>/stdout and stderr"
else
  echo "sessions' sandboxes do not run: install bubblewrap and slirp4netns (Debian packages) and start again"
fi
# Each script's console output and uncaught exceptions, one file per script
# (the emulator's worker-logs directory), and live through Cloudflare's tail
# API, which `wrangler tail` reads.
logs=$(curl -s "$emu_url/__emulator/worker-logs" | sed -n 's/.*"dir": *"\([^"]*\)".*/\1/p')
echo "worker logs (console output and uncaught exceptions; a failed request's cf-ray header names its entry):"
while read -r worker script; do
  printf '  worker %-14s %s\n' "$worker" "$logs/$account/$script.log"
done <<< "$worker_names"
printf '  %-21s %s\n' "web UI" "$logs/$account/open-inspect-web-demo.log"
echo "  live: CLOUDFLARE_API_BASE_URL=$emu_url/client/v4 CLOUDFLARE_API_TOKEN=emulator-token CLOUDFLARE_ACCOUNT_ID=$account npx wrangler tail <script>"
echo "  uncaught exceptions also get a line in $demo/emulator.log"
echo "try:"
echo "  curl $control_plane_url/health"
echo "  curl $web_url"
# Ctrl-C (or a TERM) ends the wait; the EXIT trap then stops the emulator.
trap 'echo; echo "local cloud: stopping"; exit 0' INT TERM
rc=0
wait "$emu_pid" || rc=$?
echo "the emulator exited (status $rc); see $demo/emulator.log" >&2
exit 1
