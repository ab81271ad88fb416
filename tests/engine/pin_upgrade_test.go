package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/assertup"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-sync/pinsync"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/serviceauth"
	backgroundagents "github.com/openinspect/pulumi-openinspect/third_party/background-agents"
)

// pinProgram is the installation the upgrade test deploys: what the fixture
// contracts know (no sandbox backend is deployed: the Modal app is not
// what the pins change, and deploying it would cost the test a minute).
// webAppUrl is an origin nobody serves: the test signs in as the web does,
// with the web's signature, straight at the control plane.
const pinProgram = `name: openinspect-pins
runtime: yaml
config:
  deploymentName:
    type: string
  upstreamCheckout:
    type: string
  webAppUrl:
    type: string
  githubAppPrivateKey:
    type: string
    secret: true
  anthropicApiKey:
    type: string
    secret: true
  browserAuthSecret:
    type: string
    secret: true
  tokenEncryptionKey:
    type: string
    secret: true
  repoSecretsEncryptionKey:
    type: string
    secret: true
  githubOAuthClientSecret:
    type: string
    secret: true
  slackBotToken:
    type: string
    secret: true
  slackSigningSecret:
    type: string
    secret: true
resources:
  openinspect:
    type: openinspect:index:OpenInspect
    properties:
      deploymentName: ${deploymentName}
      webAppUrl: ${webAppUrl}
      upstream:
        checkout: ${upstreamCheckout}
        allowUnverified: true
      githubApp:
        appId: "123456"
        installationId: "7890123"
        privateKey: ${githubAppPrivateKey}
      anthropicApiKey: ${anthropicApiKey}
      browserAuthSecret: ${browserAuthSecret}
      tokenEncryptionKey: ${tokenEncryptionKey}
      repoSecretsEncryptionKey: ${repoSecretsEncryptionKey}
      access:
        allowedUsers: local-dev
      githubOAuth:
        clientId: demo-oauth-client-id
        clientSecret: ${githubOAuthClientSecret}
      slack:
        botToken: ${slackBotToken}
        signingSecret: ${slackSigningSecret}
      sandbox:
        manage: false
outputs:
  controlPlaneUrl: ${openinspect.controlPlaneUrl}
  appliedMigrations: ${openinspect.appliedMigrations}
  workerNames: ${openinspect.workerNames}
  upstreamCommit: ${openinspect.upstreamCommit}
`

// pinWebOrigin is the installation's WEB_APP_URL: a loopback origin (the
// control plane refuses plain http elsewhere) under the GitHub stand-in's
// registered loopback callback.
const pinWebOrigin = "http://127.0.0.1:18049"

// TestUpgradeAcrossPins upgrades an installation from fixture pin A to
// fixture pin B (tests/fixtures/pins) in one plain `pulumi up`. B removes
// the control plane's SchedulerDO Durable Object class (deleted_classes),
// adds a worker (notifier) and a service binding to it, renames a KV
// binding, adds a cron, removes a var, adds a generated secret and appends
// two migrations.
//
// The contracts are derived in-process as `make sync-upstream` derives
// them (pinsync.Run over the fixture trees committed to a git repository),
// and the plugin is linked at each (backgroundagents.pinDir). The checkout
// is the fixture checkout with each pin's migrations and bundles, moved
// from A to B in place as `git checkout` would. At A: `pulumi up`, then
// data: a person signs in (a user and a browser session in D1), stores an
// app secret through the secrets API, a session row is written to D1, a
// KV key and an R2 object through Cloudflare's API. With B's plugin and
// checkout, the preview names each change and replaces nothing, nor
// touches what holds data; `pulumi up` applies it: the control plane's
// upload carries the deleted_classes step, accepted; the notifier answers
// and reaches the control plane; 0003 and 0004 applied, the ledger holds
// four; every datum is still there, the browser session from A still
// signs the person in, a new sign-in works and the person starts a
// session; a second preview and a second `up` change nothing.
func TestUpgradeAcrossPins(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	began := time.Now()
	pins := deriveFixturePins(t)
	plugins := buildPluginsAtPins(t, pins)
	t.Logf("pins derived and plugins linked in %s", time.Since(began).Round(time.Second))

	emu := startEmulator(t)
	private, public := rsaKeyPair(t)
	emu.put(t, "github/oauth-apps/"+github.DefaultOAuthClientID, map[string]any{
		"client_secret": installationSecrets["githubOAuthClientSecret"], "name": "Open-Inspect (pins)", "callback_url": github.DefaultCallbackURL})
	emu.put(t, "github/apps/"+github.DefaultAppID, map[string]any{"public_key": public})

	progDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(progDir, "Pulumi.yaml"), []byte(pinProgram), 0o644))
	pt := newYAMLTestWith(t, progDir, emu, plugins["a"])
	pt.SetConfig(t, "deploymentName", "pins")
	pt.SetConfig(t, "webAppUrl", pinWebOrigin)
	pt.SetConfig(t, "upstreamCheckout", "upstream")
	setInstallationSecrets(t, pt.CurrentStack())
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "githubAppPrivateKey", auto.ConfigValue{Value: private, Secret: true}))
	checkout := filepath.Join(pt.WorkingDir(), "upstream")
	pinCheckout(t, checkout, "a")

	// ---- pin A ----
	up := previewUp(t, pt)
	require.Equal(t, pins["a"].commit, up.Outputs["upstreamCommit"].Value)
	assert.Equal(t, 2.0, up.Outputs["appliedMigrations"].Value)
	const cpName, botName, notifierName = "open-inspect-control-plane-pins", "open-inspect-slack-bot-pins", "open-inspect-notifier-pins"
	cpURL := up.Outputs["controlPlaneUrl"].Value.(string)
	var cp workers.WorkerDetail
	emu.admin(t, http.MethodGet, "workers/"+emulatorAccount+"/"+cpName, &cp)
	assert.Equal(t, []string{"SchedulerDO", "SessionDO"}, cp.Classes)
	web := &webCaller{t: t, emu: emu, cpURL: cpURL, key: cp.Secrets["SERVICE_AUTH_SECRET_WEB"]}
	require.NotEmpty(t, web.key, "the generated web service secret")

	before := emu.inventory(t)
	db, sessionIndex, media := pinStorage(t, before)
	cookieA, userID := web.signIn("local-dev")
	status, body := web.call(http.MethodPut, "/secrets", cookieA, []byte(`{"secrets":{"PIN_UPGRADE_TOKEN":"kept-across-pins"}}`))
	require.Equal(t, http.StatusOK, status, body)
	emu.d1(t, db, "INSERT INTO sessions (id, title, repo_owner, repo_name, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)",
		"before-upgrade", "written at pin A", github.DefaultOrg, "hello-world", userID, time.Now().UnixMilli())
	kvStatus, _ := emu.cloudflareRaw(t, http.MethodPut, "storage/kv/namespaces/"+sessionIndex+"/values/pin-a", []byte("kept-in-kv"))
	require.Equal(t, http.StatusOK, kvStatus)
	r2Status, r2Body := emu.cloudflareRaw(t, http.MethodPut, "r2/buckets/"+media+"/objects/pin-a.txt", []byte("kept-in-r2"))
	require.Equal(t, http.StatusOK, r2Status, string(r2Body))
	dataA := emu.d1Dump(t, db)

	// ---- to pin B: the plugin and the checkout move ----
	editProgram(t, pt, func(program string) string { return strings.Replace(program, plugins["a"], plugins["b"], 1) })
	pinCheckout(t, checkout, "b")

	emu.resetCounts(t)
	preview := recordPreview(t, pt)
	assertpreview.HasNoReplacements(t, preview.result)
	assertpreview.HasNoDeletes(t, preview.result)
	assert.Equal(t, map[string]apitype.OpType{
		"openinspect-secret-serviceAuthSecretNotifier": apitype.OpCreate,
		"openinspect-worker-notifier":                  apitype.OpCreate,
		"openinspect-worker-control-plane":             apitype.OpUpdate,
		"openinspect-worker-slack-bot":                 apitype.OpUpdate,
		"openinspect-d1-migrations":                    apitype.OpUpdate,
		"openinspect-worker-urls":                      apitype.OpUpdate,
	}, preview.changed(), "what the preview changes; everything else, the data's holders among them, stays as it is")
	for _, holder := range []string{"openinspect-d1", "openinspect-kv-session-index", "openinspect-kv-slack-kv", "openinspect-r2-media",
		"openinspect-queue-slack-completion", "openinspect-queue-slack-completion-dlq"} {
		assert.Equal(t, apitype.OpSame, preview.ops[holder], "%s holds data: the upgrade leaves it alone", holder)
	}
	assert.Equal(t, map[string]string{
		"crons[1]":          "add", // the new cron
		"durableObjects[1]": "delete",
		"kvNamespaces[0]":   "update", // REPOS_CACHE -> SESSION_INDEX, same namespace
		"services[0]":       "add",    // NOTIFIER
		`secrets["SERVICE_AUTH_SECRET_NOTIFIER"]`: "add",
		"script": "update",
	}, preview.diffs["openinspect-worker-control-plane"])
	assert.Equal(t, map[string]string{`vars["DEFAULT_MODEL"]`: "delete"}, preview.diffs["openinspect-worker-slack-bot"],
		"only the removed var: the other workers' URLs stay known while a worker is added")
	assert.Equal(t, map[string]string{`files["0003_add_session_status.sql"]`: "add", `files["0004_create_notifications.sql"]`: "add"},
		preview.diffs["openinspect-d1-migrations"])
	cpSays := strings.Join(preview.diags["openinspect-worker-control-plane"], "\n")
	for _, want := range []string{"kvNamespaces SESSION_INDEX added", "kvNamespaces REPOS_CACHE removed", "services NOTIFIER added",
		"durableObjects SCHEDULER removed", "secrets SERVICE_AUTH_SECRET_NOTIFIER added", "crons 23 * * * * added",
		"with the Durable Object migration v1 -> v2: deleted_classes SchedulerDO (every object of the class is deleted with its storage)"} {
		assert.Contains(t, cpSays, want, "the control plane's preview message")
	}
	assert.Contains(t, strings.Join(preview.diags["openinspect-worker-slack-bot"], "\n"), "vars DEFAULT_MODEL removed")
	assert.Contains(t, strings.Join(preview.diags["openinspect-d1-migrations"], "\n"),
		"2 migration(s) will be applied, in order: 0003_add_session_status.sql, 0004_create_notifications.sql")
	_, counts := emu.cloudflareCalls(t)
	assert.Empty(t, counts, "the preview plans from the state alone: no call")

	// ---- pulumi up at B ----
	upB := previewUp(t, pt, func() { emu.resetCounts(t) })
	assertup.HasNoReplacements(t, upB)
	assertup.HasNoDeletes(t, upB)
	_, counts = emu.cloudflareCalls(t)
	// One upload each of the control plane, the Slack bot and the notifier;
	// the control plane and the new notifier bind each other and go side by
	// side, so when the control plane's upload comes first it is refused for
	// the missing NOTIFIER; if the notifier exists by the time the provider
	// looks, the control plane is simply sent again (one more), otherwise it
	// is sent without the binding and again once the notifier exists (the
	// provider's circular-binding path: two more).
	assert.Contains(t, []int{3, 4, 5}, counts[uploadRoute], "uploads of the control plane, the Slack bot and the notifier: %v", counts)
	assert.Equal(t, pins["b"].commit, upB.Outputs["upstreamCommit"].Value)
	assert.Equal(t, 4.0, upB.Outputs["appliedMigrations"].Value)
	assert.Equal(t, map[string]any{"control-plane": cpName, "slack-bot": botName, "notifier": notifierName}, upB.Outputs["workerNames"].Value)

	// The Durable Object class went through deleted_classes, accepted.
	emu.admin(t, http.MethodGet, "workers/"+emulatorAccount+"/"+cpName, &cp)
	assert.Equal(t, []string{"SessionDO"}, cp.Classes)
	assert.Equal(t, "v2", cp.MigrationTag)
	require.NotEmpty(t, cp.Migrations)
	last := cp.Migrations[len(cp.Migrations)-1]
	assert.Equal(t, workers.AppliedMigration{Version: last.Version, OldTag: "v1", NewTag: "v2", DeletedClasses: []string{"SchedulerDO"}}, last)
	assert.Equal(t, []string{"SchedulerDO", "SessionDO"}, cp.Migrations[0].NewSqliteClasses, "A created both classes")
	assert.ElementsMatch(t, []string{"* * * * *", "23 * * * *"}, cp.Crons)
	bindings := map[string]workers.WorkerBinding{}
	for _, b := range cp.Bindings {
		bindings[b.Name] = b
	}
	assert.Equal(t, sessionIndex, bindings["SESSION_INDEX"].NamespaceID, "the renamed binding names the same namespace")
	assert.NotContains(t, bindings, "REPOS_CACHE")
	assert.NotContains(t, bindings, "SCHEDULER")
	assert.Equal(t, notifierName, bindings["NOTIFIER"].Service)
	var notifier, bot workers.WorkerDetail
	emu.admin(t, http.MethodGet, "workers/"+emulatorAccount+"/"+notifierName, &notifier)
	emu.admin(t, http.MethodGet, "workers/"+emulatorAccount+"/"+botName, &bot)
	assert.NotContains(t, bot.Vars, "DEFAULT_MODEL")
	require.NotEmpty(t, notifier.Secrets["SERVICE_AUTH_SECRET"])
	assert.Equal(t, notifier.Secrets["SERVICE_AUTH_SECRET"], cp.Secrets["SERVICE_AUTH_SECRET_NOTIFIER"], "one generated secret, both ends")
	status, body = httpDo(t, http.MethodGet, emu.workerURL(notifierName)+"/fixture/control-plane-health", nil, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"healthy","service":"open-inspect-control-plane"}`, body, "the notifier reaches the control plane through its binding")

	// The migrations: 0003 and 0004 applied on top, the ledger holds four.
	ledger := emu.d1Rows(t, db, "SELECT version, name FROM _schema_migrations ORDER BY version")
	assert.Equal(t, []map[string]any{
		{"version": "0001", "name": "0001_create_sessions.sql"}, {"version": "0002", "name": "0002_create_secrets.sql"},
		{"version": "0003", "name": "0003_add_session_status.sql"}, {"version": "0004", "name": "0004_create_notifications.sql"},
	}, ledger)
	assert.Len(t, emu.d1Rows(t, db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'notifications'"), 1)

	// The data is still there, in the same database, namespace and bucket.
	after := emu.inventory(t)
	assert.Equal(t, idsOf(before), idsOf(after), "the same D1 database, KV namespaces, R2 bucket and queues")
	dataB := emu.d1Dump(t, db)
	for table, rows := range dataA {
		if table == "_schema_migrations" || table == "sessions" || table == "auth_verifications" {
			continue
		}
		assert.Equal(t, rows, dataB[table], "table %s", table)
	}
	assert.Equal(t, []map[string]any{{"id": "before-upgrade", "title": "written at pin A", "created_by": userID, "status": "created"}},
		emu.d1Rows(t, db, "SELECT id, title, created_by, status FROM sessions"), "A's row, with 0003's status")
	var stored map[string]string
	emu.admin(t, http.MethodGet, "app-secrets/"+emulatorAccount+"/"+cpName, &stored)
	assert.Equal(t, "kept-across-pins", stored["PIN_UPGRADE_TOKEN"], "the app secret, sealed with the same key")
	_, kvValue := emu.cloudflareRaw(t, http.MethodGet, "storage/kv/namespaces/"+sessionIndex+"/values/pin-a", nil)
	assert.Equal(t, "kept-in-kv", string(kvValue))
	_, object := emu.cloudflareRaw(t, http.MethodGet, "r2/buckets/"+media+"/objects/pin-a.txt", nil)
	assert.Equal(t, "kept-in-r2", string(object))

	// Signing in and starting a session: A's browser session still holds,
	// a new sign-in works, and the person starts a session.
	assert.Equal(t, "local-dev", web.sessionLogin(cookieA), "the browser session from pin A")
	cookieB, sameUser := web.signIn("local-dev")
	assert.Equal(t, userID, sameUser, "the same person")
	status, body = web.call(http.MethodGet, "/secrets", cookieB, nil)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "PIN_UPGRADE_TOKEN")
	status, body = web.call(http.MethodPost, "/sessions", cookieB, []byte(`{"repoOwner":"`+github.DefaultOrg+`","repoName":"hello-world","title":"after the upgrade"}`))
	require.Equal(t, http.StatusCreated, status, body)
	var started struct {
		SessionID string `json:"sessionId"`
		Status    string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &started))
	assert.Equal(t, "spawning", started.Status, "the session asks for its sandbox")
	rows := emu.d1Rows(t, db, "SELECT title, repo_owner, repo_name, created_by FROM sessions WHERE id = ?", started.SessionID)
	assert.Equal(t, []map[string]any{{"title": "after the upgrade", "repo_owner": github.DefaultOrg, "repo_name": "hello-world", "created_by": userID}}, rows)
	status, body = web.call(http.MethodGet, "/sessions/"+started.SessionID, cookieB, nil)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"repo":"`+github.DefaultOrg+`/hello-world"`, "the session's Durable Object holds its state")

	// A second preview and a second `up` change nothing.
	requireNoOpPreview(t, *pt.CurrentStack(), emu)
	assertup.HasNoChanges(t, pt.Up(t))
	t.Logf("the upgrade across pins took %s", time.Since(began).Round(time.Second))
}

// fixturePin is a pin derived from a fixture tree: dir holds its
// contract.json and UPSTREAM_COMMIT.
type fixturePin struct{ dir, commit string }

// deriveFixturePins commits tests/fixtures/pins/a and then b to a git
// repository in a temporary directory and syncs to each commit as `make
// sync-upstream` does: A from the committed contract, B from A's.
func deriveFixturePins(t *testing.T) map[string]fixturePin {
	t.Helper()
	root := filepath.Join(repoRoot(), "tests", "fixtures", "pins")
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.test", "GIT_AUTHOR_DATE=2026-08-01T12:00:00Z",
			"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.test", "GIT_COMMITTER_DATE=2026-08-01T12:00:00Z")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet", "--initial-branch=main")
	pins := map[string]fixturePin{}
	current := filepath.Join(t.TempDir(), "contract.json")
	require.NoError(t, os.WriteFile(current, backgroundagents.ContractJSON(), 0o644))
	for _, name := range []string{"a", "b"} {
		entries, err := os.ReadDir(repo)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name() != ".git" {
				require.NoError(t, os.RemoveAll(filepath.Join(repo, e.Name())))
			}
		}
		require.NoError(t, os.CopyFS(repo, os.DirFS(filepath.Join(root, name))))
		git("add", "--all")
		git("commit", "--quiet", "-m", "fixture pin "+name)
		commit := git("rev-parse", "HEAD")

		dir := t.TempDir()
		contract := filepath.Join(dir, "contract.json")
		raw, err := os.ReadFile(current)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(contract, raw, 0o644))
		res, err := pinsync.Run(t.Context(), pinsync.Options{Source: repo, Commit: commit, ContractFile: contract,
			PinFile: filepath.Join(dir, "UPSTREAM_COMMIT"), DecisionsFile: filepath.Join(root, "decisions-"+name+".json")})
		require.NoError(t, err, "sync to fixture pin %s", name)
		if name == "b" {
			logIfFailed(t, "change report A -> B:\n%s", res.Report)
		}
		pins[name] = fixturePin{dir: dir, commit: commit}
		current = contract
	}
	return pins
}

// buildPluginsAtPins links the plugin once per pin, side by side, each
// reading its pin from the pin's directory (backgroundagents.pinDir; the
// packages are compiled already, for the engine tests' own plugin).
// Returns the directory of each pin's plugin.
func buildPluginsAtPins(t *testing.T, pins map[string]fixturePin) map[string]string {
	t.Helper()
	out := map[string]string{}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, pin := range pins {
		dir := t.TempDir()
		out[name] = dir
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), "go", "build", "-ldflags",
				"-w -X github.com/openinspect/pulumi-openinspect/third_party/background-agents.pinDir="+pin.dir,
				"-o", filepath.Join(dir, "pulumi-resource-openinspect"), "./provider/cmd/pulumi-resource-openinspect")
			cmd.Dir = repoRoot()
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if raw, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				errs[name] = fmt.Errorf("%w\n%s", err, raw)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for name, err := range errs {
		t.Fatalf("linking the plugin at fixture pin %s: %v", name, err)
	}
	return out
}

// schedulerClass is the Durable Object class fixture pin A binds as
// SCHEDULER and B deletes; the fixture control plane's bundle is B's, so
// A's checkout appends it (the emulator, as Cloudflare, refuses a class
// binding the script does not export).
const schedulerClass = `
// Pin A's scheduler (appended by TestUpgradeAcrossPins): the class pin B
// deletes. It holds no state.
export class SchedulerDO {
  async fetch() {
    return new Response("scheduler");
  }
}
`

// pinCheckout makes dir the fixture checkout at a fixture pin, as `git
// checkout` moves a clone: tests/fixtures/upstream (the workers' bundles,
// the web build, the sandbox sources), the pin tree's migrations instead
// of the fixture's, and the pin tree's built bundles (B's notifier) over
// it; at A the control plane's bundle also exports SchedulerDO.
func pinCheckout(t *testing.T, dir, pin string) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	copyFixture(t, dir)
	tree := filepath.Join(repoRoot(), "tests", "fixtures", "pins", pin)
	migrations := filepath.Join(dir, "terraform", "d1", "migrations")
	require.NoError(t, os.RemoveAll(migrations))
	require.NoError(t, os.CopyFS(migrations, os.DirFS(filepath.Join(tree, "terraform", "d1", "migrations"))))
	bundles, err := filepath.Glob(filepath.Join(tree, "packages", "*", "dist", "index.js"))
	require.NoError(t, err)
	for _, b := range bundles {
		rel, _ := filepath.Rel(tree, b)
		raw, err := os.ReadFile(b)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), raw, 0o644))
	}
	if pin == "a" {
		cp := filepath.Join(dir, "packages", "control-plane", "dist", "index.js")
		f, err := os.OpenFile(cp, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(schedulerClass)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

// pinStorage is the installation's D1 database ID, session-index KV
// namespace ID and media bucket name.
func pinStorage(t *testing.T, inv emulator.Inventory) (db, sessionIndex, media string) {
	t.Helper()
	require.Len(t, inv.D1, 1)
	for _, ns := range inv.KV {
		if ns.Title == "open-inspect-session-index-pins" {
			sessionIndex = ns.ID
		}
	}
	require.Len(t, inv.R2, 1)
	require.NotEmpty(t, sessionIndex)
	return inv.D1[0].ID, sessionIndex, inv.R2[0].Name
}

// idsOf names every data-holding object by its ID (the R2 bucket by name):
// a replacement would give one a new ID.
func idsOf(inv emulator.Inventory) []string {
	var out []string
	for _, d := range inv.D1 {
		out = append(out, "d1 "+d.Name+" "+d.ID)
	}
	for _, k := range inv.KV {
		out = append(out, "kv "+k.Title+" "+k.ID)
	}
	for _, r := range inv.R2 {
		out = append(out, "r2 "+r.Name)
	}
	for _, q := range inv.Queues {
		out = append(out, "queue "+q.Name+" "+q.ID)
	}
	sort.Strings(out)
	return out
}

// pinPreview is a preview's steps, read from the engine's events: each
// resource's step by name, an update's detailed diff (property path ->
// kind), and what the provider said about it.
type pinPreview struct {
	result auto.PreviewResult
	ops    map[string]apitype.OpType
	diffs  map[string]map[string]string
	diags  map[string][]string
}

// changed is every step that is not "same".
func (p pinPreview) changed() map[string]apitype.OpType {
	out := map[string]apitype.OpType{}
	for name, op := range p.ops {
		if op != apitype.OpSame {
			out[name] = op
		}
	}
	return out
}

// recordPreview runs `pulumi preview` and records its steps.
func recordPreview(t *testing.T, pt *pulumitest.PulumiTest) pinPreview {
	t.Helper()
	p := pinPreview{ops: map[string]apitype.OpType{}, diffs: map[string]map[string]string{}, diags: map[string][]string{}}
	name := func(urn string) string { return urn[strings.LastIndex(urn, "::")+2:] }
	ch := make(chan events.EngineEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range ch {
			switch {
			case e.ResourcePreEvent != nil:
				m := e.ResourcePreEvent.Metadata
				if m.Type == "pulumi:pulumi:Stack" {
					continue
				}
				p.ops[name(m.URN)] = m.Op
				if len(m.DetailedDiff) > 0 {
					diff := map[string]string{}
					for _, path := range slices.Sorted(maps.Keys(m.DetailedDiff)) {
						diff[path] = string(m.DetailedDiff[path].Kind)
					}
					p.diffs[name(m.URN)] = diff
				}
			case e.DiagnosticEvent != nil && e.DiagnosticEvent.URN != "":
				n := name(e.DiagnosticEvent.URN)
				p.diags[n] = append(p.diags[n], strings.TrimSpace(e.DiagnosticEvent.Message))
			}
		}
	}()
	p.result = pt.Preview(t, optpreview.EventStreams(ch), optpreview.Diff())
	<-done
	logIfFailed(t, "the preview A -> B:\n%s", p.result.StdOut)
	return p
}

// logIfFailed logs, once the test has ended and only if it failed, what is
// long and mostly useful for a failure: the log then follows the errors, so
// a reader of a cut CI log sees the errors first.
func logIfFailed(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf(format, args...)
		}
	})
}

// webCaller calls the control plane as the installation's web does for a
// person: signed as the service "web" (SERVICE_AUTH_SECRET_WEB), with the
// person's cookies and the web's origin, so the test signs in without a
// browser and without the web Worker (which no fixture pin deploys).
type webCaller struct {
	t     *testing.T
	emu   *emulatorProcess
	cpURL string
	key   string
}

// do sends a request signed as the web and answers its status, headers and
// body; redirects are not followed.
func (w *webCaller) do(method, pathAndQuery, cookie string, body []byte) (int, http.Header, string) {
	w.t.Helper()
	path, rawQuery, _ := strings.Cut(pathAndQuery, "?")
	req, err := http.NewRequest(method, w.cpURL+pathAndQuery, bytes.NewReader(body))
	require.NoError(w.t, err)
	req.Header.Set("X-OpenInspect-Service", "web")
	req.Header.Set("X-OpenInspect-Service-Signature", serviceauth.Header(serviceauth.Request{
		Service: "web", Key: w.key, Method: method, Path: path, Query: canonicalQuery(w.t, rawQuery), Body: body}))
	req.Header.Set("Origin", pinWebOrigin)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	res, err := noRedirects().Do(req)
	require.NoError(w.t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(w.t, err)
	return res.StatusCode, res.Header, string(raw)
}

// call is do for a JSON route: status and body.
func (w *webCaller) call(method, path, cookie string, body []byte) (int, string) {
	status, _, out := w.do(method, path, cookie, body)
	return status, out
}

// signIn signs login in through GitHub sign-in (the GitHub stand-in's
// authorize form), as a browser on the web does, and answers the browser
// session's cookie and the person's user ID.
func (w *webCaller) signIn(login string) (cookie, userID string) {
	t := w.t
	t.Helper()
	status, header, body := w.do(http.MethodPost, "/api/auth/sign-in/social", "", []byte(`{"provider":"github","callbackURL":"/"}`))
	require.Equal(t, http.StatusOK, status, body)
	var social struct {
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &social))
	state := cookieFrom(t, header, "openinspect.state")
	authorize, err := url.Parse(social.URL)
	require.NoError(t, err)
	require.Equal(t, "/login/oauth/authorize", authorize.Path, "GitHub's authorize page: %s", social.URL)

	// The authorize page and its form, at the stand-in (the emulator serves
	// github.com's pages under its prefix).
	page := w.emu.url + github.Prefix + authorize.Path
	res, err := noRedirects().Get(page + "?" + authorize.RawQuery)
	require.NoError(t, err)
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(raw))
	form := url.Values{"login": {login}}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(raw), -1) {
		form.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	res, err = noRedirects().PostForm(page, form)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode, "the stand-in sends the browser back")
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "/api/auth/callback/github", back.Path)

	status, header, body = w.do(http.MethodGet, "/api/auth/callback/github?"+back.RawQuery, state, nil)
	require.Equal(t, http.StatusFound, status, "the callback signs in and redirects: %s", body)
	cookie = cookieFrom(t, header, "openinspect.session_token")
	require.Equal(t, login, w.sessionLogin(cookie))
	status, body = w.call(http.MethodGet, "/api/auth/get-session", cookie, nil)
	require.Equal(t, http.StatusOK, status)
	var session struct {
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &session))
	return cookie, session.User.ID
}

// sessionLogin is the login of the person a browser session's cookie signs
// in, "" when it signs in no one.
func (w *webCaller) sessionLogin(cookie string) string {
	w.t.Helper()
	status, body := w.call(http.MethodGet, "/api/auth/get-session", cookie, nil)
	require.Equal(w.t, http.StatusOK, status, body)
	var session *struct {
		User struct {
			Login string `json:"login"`
		} `json:"user"`
	}
	require.NoError(w.t, json.Unmarshal([]byte(body), &session))
	if session == nil {
		return ""
	}
	return session.User.Login
}

// hiddenInput is a hidden field of the stand-in's authorize form.
var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)

// cookieFrom is the name=value pair a response sets for a cookie, as a
// browser sends it back.
func cookieFrom(t *testing.T, header http.Header, name string) string {
	t.Helper()
	for _, c := range (&http.Response{Header: header}).Cookies() {
		if c.Name == name && c.MaxAge >= 0 && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("no cookie %s in %v", name, header.Values("Set-Cookie"))
	return ""
}

// noRedirects is a loopback client that returns redirects as answers.
func noRedirects() *http.Client {
	c := *loopback.Client(30 * time.Second)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// canonicalQuery is a query as sig1 signs it: the pairs, parsed as a form,
// sorted bytewise by key NUL value and each part percent-encoded as
// JavaScript's encodeURIComponent encodes it.
func canonicalQuery(t *testing.T, raw string) string {
	t.Helper()
	values, err := url.ParseQuery(raw)
	require.NoError(t, err)
	var pairs []string
	for k, vs := range values {
		for _, v := range vs {
			pairs = append(pairs, k+"\x00"+v)
		}
	}
	sort.Strings(pairs)
	for i, p := range pairs {
		k, v, _ := strings.Cut(p, "\x00")
		pairs[i] = encodeURIComponent(k) + "=" + encodeURIComponent(v)
	}
	return strings.Join(pairs, "&")
}

func encodeURIComponent(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
