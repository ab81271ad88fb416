package installation_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// componentToken is the component's type token.
const componentToken = "openinspect:index:OpenInspect"

func secret(v string) property.Value { return property.New(v).WithSecret(true) }

// unknownSecret is a secret whose value a preview does not know yet.
var unknownSecret = property.New(property.Computed).WithSecret(true)

// validSpec is a spec the component accepts, the sandbox side left out: every
// case below breaks one thing in it.
func validSpec(checkout string) map[string]any {
	return map[string]any{
		"deploymentName": "t1",
		// The fixture is not the pinned commit's tree.
		"upstream": map[string]any{"checkout": checkout, "allowUnverified": true},
		"githubApp": map[string]any{"appId": "1", "installationId": "2",
			"privateKey": secret("-----BEGIN PRIVATE KEY-----table")},
		"anthropicApiKey":          secret("sk-ant-table-test"),
		"browserAuthSecret":        secret("browser-auth-secret-with-at-least-32-characters"),
		"tokenEncryptionKey":       secret(base64.StdEncoding.EncodeToString([]byte("token-encryption-key-of-32-bytes"))),
		"repoSecretsEncryptionKey": secret(base64.StdEncoding.EncodeToString(make([]byte, 32))),
		"sandbox":                  map[string]any{"manage": false},
		// What upstream's gates require: the Slack bot's credentials (it is
		// on by default), an allowlist and a sign-in provider.
		"slack":       map[string]any{"botToken": secret("xoxb-table-test"), "signingSecret": secret("slack-signing-table")},
		"access":      map[string]any{"allowedUsers": "octocat"},
		"githubOAuth": map[string]any{"clientId": "oauth-client", "clientSecret": secret("oauth-secret-table")},
	}
}

// registrations records what a Construct registers. For the D1 database it
// also runs the real Create against the emulator, so a spec the component
// wrongly accepted would show up in the emulator's counters, not only here.
type registrations struct {
	h     *providertest.Harness
	mu    sync.Mutex
	types []string
}

func (r *registrations) newResource(args integration.MockResourceArgs) (string, property.Map, error) {
	r.mu.Lock()
	r.types = append(r.types, string(args.TypeToken))
	r.mu.Unlock()
	if args.TypeToken == cloudflare.D1DatabaseToken {
		resp, err := r.h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, args.Name), Properties: args.Inputs})
		return resp.ID, resp.Properties, err
	}
	return args.Name + "-id", args.Inputs, nil
}

func (r *registrations) reset() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.types
	r.types = nil
	return out
}

// tableCase is one invalid spec: modify breaks validSpec.
type tableCase struct {
	name    string
	modify  func(m map[string]any)
	want    string // the field path and the start of its problem
	secret  string // a value that must not appear
	preview bool
}

// absentText is, by case name, a text that must not appear in the message
// (a follow-on problem, a wrong hint).
var absentText = map[string]string{}

// goValue matches what printing a Go value leaves in a message.
var goValue = regexp.MustCompile(`&\{|map\[|\{[A-Za-z0-9"]|\[\]string|<nil>|%!|0x[0-9a-f]{6,}`)

// TestInvalidSpecsRefusedBeforeAnyCall constructs the component in-process,
// through the provider's Construct, for each invalid spec: it must fail
// naming the field, register nothing, make no call to the emulator, print no
// Go value and quote no secret.
func TestInvalidSpecsRefusedBeforeAnyCall(t *testing.T) {
	h := providertest.NewHarness(t)
	rec := &registrations{h: h}
	server, err := integration.NewServer(t.Context(), family.PackageName, providertest.Version,
		integration.WithProvider(providertest.NewProvider(t)),
		integration.WithMocks(&integration.MockResourceMonitor{NewResourceF: rec.newResource}))
	require.NoError(t, err)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: h.Config()}))

	fixture := providertest.FixtureCheckout(t)
	tmp := t.TempDir()
	// A checkout whose control-plane bundle is a symlink to a file outside it.
	symlinked := filepath.Join(tmp, "symlinked-checkout")
	require.NoError(t, os.CopyFS(symlinked, os.DirFS(fixture)))
	bundle := filepath.Join(symlinked, "packages", "control-plane", "dist", "index.js")
	require.NoError(t, os.Remove(bundle))
	outside := filepath.Join(tmp, "outside.js")
	require.NoError(t, os.WriteFile(outside, []byte(providertest.FixtureWorker), 0o644))
	require.NoError(t, os.Symlink(outside, bundle))
	empty := filepath.Join(tmp, "empty.js")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	migrations := func(name string, files map[string]string) string {
		dir := filepath.Join(tmp, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for f, body := range files {
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644))
		}
		return dir
	}
	withSymlink := migrations("migrations-symlink", map[string]string{"0001_init.sql": "CREATE TABLE a (x);"})
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(withSymlink, "0002_passwd.sql")))
	wd, err := os.Getwd()
	require.NoError(t, err)
	// A relative path that climbs out of the working directory to /etc/passwd.
	escape := strings.Repeat("../", strings.Count(wd, string(filepath.Separator))) + "etc/passwd"

	worker := func(extra map[string]any) func(m map[string]any) {
		return func(m map[string]any) {
			w := map[string]any{"name": "control-plane"}
			for k, v := range extra {
				w[k] = v
			}
			m["workers"] = []any{w}
		}
	}
	set := func(key string, v any) func(m map[string]any) { return func(m map[string]any) { m[key] = v } }
	upstream := func(u map[string]any) func(m map[string]any) {
		return func(m map[string]any) {
			if _, ok := u["checkout"]; !ok {
				u["checkout"] = fixture
			}
			u["allowUnverified"] = true
			m["upstream"] = u
		}
	}
	appSecrets := map[string]any{}
	for i := range 51 {
		appSecrets[fmt.Sprintf("KEY_%d", i)] = secret("v")
	}
	daytona := func(d map[string]any) func(m map[string]any) {
		return set("sandbox", map[string]any{"provider": "daytona", "manage": false, "daytona": d})
	}

	cases := []tableCase{
		// Secret values, awaited.
		{"empty anthropic key", set("anthropicApiKey", secret("")), "anthropicApiKey: the secret is empty", "", false},
		{"whitespace anthropic key", set("anthropicApiKey", secret("  \t ")), "anthropicApiKey: the secret is only whitespace", "", false},
		{"missing anthropic key", func(m map[string]any) { delete(m, "anthropicApiKey") }, "anthropicApiKey: required", "", false},
		{"empty private key", set("githubApp", map[string]any{"appId": "1", "installationId": "2", "privateKey": secret("")}),
			"githubApp.privateKey: the secret is empty", "", false},
		{"short browser auth secret", set("browserAuthSecret", secret("tooshort-browser-xyz")),
			"browserAuthSecret: has 20 non-whitespace characters", "tooshort-browser-xyz", false},
		{"whitespace token key", set("tokenEncryptionKey", secret("\n")), "tokenEncryptionKey: the secret is only whitespace", "", false},
		{"repo key not base64", set("repoSecretsEncryptionKey", secret("not-base64-key-value!!")),
			"repoSecretsEncryptionKey: is not standard base64", "not-base64-key-value!!", false},
		{"repo key of 10 bytes", set("repoSecretsEncryptionKey", secret("c2hvcnQta2V5LTE=")),
			"repoSecretsEncryptionKey: decodes to 11 bytes", "c2hvcnQta2V5LTE=", false},
		{"empty repo key", set("repoSecretsEncryptionKey", secret("")), "repoSecretsEncryptionKey: the secret is empty", "", false},
		{"empty provider accounts key", set("providerAccountsEncryptionKey", secret("")),
			"providerAccountsEncryptionKey: the secret is empty", "", false},
		{"provider accounts key not base64", set("providerAccountsEncryptionKey", secret("zz-not-a-key")),
			"providerAccountsEncryptionKey: is not standard base64", "zz-not-a-key", false},
		{"empty oauth secret", set("githubOAuth", map[string]any{"clientId": "id", "clientSecret": secret("")}),
			"githubOAuth.clientSecret: the secret is empty", "", false},
		{"missing oauth secret", set("googleOAuth", map[string]any{"clientId": "id"}), "googleOAuth.clientSecret: required", "", false},
		{"whitespace slack token", set("slack", map[string]any{"botToken": secret("   "), "signingSecret": secret("sig")}),
			"slack.botToken: the secret is only whitespace", "", false},
		{"empty linear client secret", set("linearBot", map[string]any{"enabled": true, "clientId": "c",
			"clientSecret": secret(""), "webhookSecret": secret("w")}), "linearBot.clientSecret: the secret is empty", "", false},
		{"empty worker secret", worker(map[string]any{"secrets": map[string]any{"EXTRA": secret("")}}),
			"workers[0].secrets.EXTRA: the secret is empty", "", false},
		{"empty app secret", set("appSecrets", map[string]any{"GOOD": secret("")}), "appSecrets.GOOD: the secret is empty", "", false},
		{"app secret over 16 KiB", set("appSecrets", map[string]any{"BIG": secret(strings.Repeat("x", 16<<10+1))}),
			"appSecrets.BIG: the value is 16385 bytes", "", false},
		{"empty daytona key", daytona(map[string]any{"apiUrl": "https://daytona.example", "apiKey": secret(""), "baseSnapshot": "s"}),
			"sandbox.daytona.apiKey: the secret is empty", "", false},

		// Names of secrets, vars and bindings: checked even when values are unknown.
		{"worker secret key unknown value", worker(map[string]any{"secrets": map[string]any{"bad-key": unknownSecret}}),
			`workers[0].secrets.bad-key: "bad-key" is not a valid binding name`, "", true},
		{"worker secret key starting with a digit", worker(map[string]any{"secrets": map[string]any{"1ABC": secret("x")}}),
			`workers[0].secrets.1ABC: "1ABC" is not a valid binding name`, "", false},
		{"worker var key with a space", worker(map[string]any{"vars": map[string]any{"HAS SPACE": "x"}}),
			`workers[0].vars["HAS SPACE"]: "HAS SPACE" is not a valid binding name`, "", false},
		{"var and secret of one name", worker(map[string]any{"vars": map[string]any{"K": "v"}, "secrets": map[string]any{"K": secret("s")}}),
			"workers[0].secrets.K: K is also set in workers[0].vars", "", false},
		{"var named like a binding", worker(map[string]any{"vars": map[string]any{"DB": "x"}}),
			"workers[0].vars.DB: binding name DB is already used by upstream's d1 binding DB of worker control-plane", "", false},
		{"kv binding named like the d1 binding", worker(map[string]any{"bindings": map[string]any{"kv": []any{
			map[string]any{"binding": "DB", "target": "session-index"}}}}),
			"workers[0].bindings.kv[0].binding: binding name DB is already used by upstream's d1 binding", "", false},
		{"one binding name twice", worker(map[string]any{"bindings": map[string]any{"r2": []any{
			map[string]any{"binding": "X", "target": "media"}, map[string]any{"binding": "X", "target": "media"}}}}),
			"workers[0].bindings.r2[1].binding: binding name X is already used by workers[0].bindings.r2[0].binding", "", false},
		{"invalid binding name", worker(map[string]any{"bindings": map[string]any{"queues": []any{
			map[string]any{"binding": "bad-name", "target": "x"}}}}), `workers[0].bindings.queues[0].binding: "bad-name" is not a valid binding name`, "", false},
		{"empty binding name", worker(map[string]any{"bindings": map[string]any{"kv": []any{
			map[string]any{"binding": "", "target": "session-index"}}}}), "workers[0].bindings.kv[0].binding: required", "", false},
		{"app secret key with a hyphen", set("appSecrets", map[string]any{"lower-case": secret("x")}), `appSecrets.lower-case: "lower-case" is not a valid secret name`, "", false},
		{"app secret key reserved in lower case", set("appSecrets", map[string]any{"sandbox_id": secret("x")}),
			"appSecrets.sandbox_id: SANDBOX_ID is reserved for the sandbox runtime (the store upper-cases sandbox_id to SANDBOX_ID)", "", false},
		{"app secret keys equal once upper-cased", set("appSecrets", map[string]any{"TOKEN": secret("a"), "token": secret("b")}),
			"appSecrets.token: names the same secret as appSecrets.TOKEN", "", false},
		{"app secrets over 64 KiB together", set("appSecrets", map[string]any{"A": secret(strings.Repeat("a", 16<<10)),
			"B": secret(strings.Repeat("b", 16<<10)), "C": secret(strings.Repeat("c", 16<<10)), "D": secret(strings.Repeat("d", 16<<10)),
			"E": secret("e")}), "appSecrets: the values together are over the store's 64 KiB limit", "", false},
		{"app secret key reserved", set("appSecrets", map[string]any{"PATH": secret("x")}), "appSecrets.PATH: PATH is reserved", "", false},
		{"too many app secrets", set("appSecrets", appSecrets), "appSecrets: 51 secrets given; the store holds at most 50", "", false},

		// Names of the installation and its resources.
		{"empty deployment name", set("deploymentName", ""), "deploymentName: required", "", false},
		{"deployment name with upper case", set("deploymentName", "Bad_Name"), `deploymentName: "Bad_Name" is not a valid name part`, "", false},
		{"deployment name too long", set("deploymentName", strings.Repeat("x", 40)), "deploymentName: the name", "", false},
		{"name prefix with a leading hyphen", set("namePrefix", "-x"), `namePrefix: "-x" is not a valid name part`, "", false},
		{"kv namespace name", set("kvNamespaces", []any{"Bad"}), `kvNamespaces[0]: "Bad" is not a valid name part`, "", false},
		{"r2 bucket name", set("r2Buckets", []any{"a_b"}), `r2Buckets[0]: "a_b" is not a valid name part`, "", false},
		{"queue name", set("queues", []any{"q q"}), `queues[0]: "q q" is not a valid name part`, "", false},
		{"kv namespace upstream has", set("kvNamespaces", []any{"session-index"}), `kvNamespaces[0]: "session-index" is already part of the installation`, "", false},
		{"media location", set("media", map[string]any{"location": "mars"}), `media.location: "mars" is not an R2 location hint`, "", false},
		{"media bucket upper case", set("media", map[string]any{"bucketName": "UPPER"}), `media.bucketName: "UPPER" is not a valid R2 bucket name`, "", false},
		{"media bucket too short", set("media", map[string]any{"bucketName": "ab"}), `media.bucketName: "ab" is not a valid R2 bucket name`, "", false},
		{"deletion policy", set("deletionPolicy", "Keep"), `deletionPolicy: must be Delete or Orphan, got "Keep"`, "", false},
		{"web app url over http", set("webAppUrl", "http://example.com"), `webAppUrl: "http://example.com" must be an https origin`, "", false},
		{"web app url with a path", set("webAppUrl", "https://example.com/app"), `webAppUrl: "https://example.com/app" must be an https origin`, "", false},

		// Workers.
		{"duplicate worker", set("workers", []any{map[string]any{"name": "extra", "script": outside}, map[string]any{"name": "extra", "script": outside}}),
			`workers[1].name: duplicate worker name "extra" (also workers[0])`, "", false},
		{"custom worker without script", set("workers", []any{map[string]any{"name": "extra"}}), "workers[0].script: required: extra is not an upstream worker", "", false},
		{"worker name upper case", set("workers", []any{map[string]any{"name": "Bad", "script": outside}}), `workers[0].name: "Bad" is not a valid name part`, "", false},
		{"cron", worker(map[string]any{"crons": []any{"* * *"}}), "workers[0].crons[0]:", "", false},
		{"kv target missing", worker(map[string]any{"bindings": map[string]any{"kv": []any{map[string]any{"binding": "X", "target": "nope"}}}}),
			`workers[0].bindings.kv[0].target: no KV namespace "nope" in this installation`, "", false},
		{"service target missing", worker(map[string]any{"bindings": map[string]any{"services": []any{map[string]any{"binding": "X", "target": "linear-bot"}}}}),
			`workers[0].bindings.services[0].target: no worker "linear-bot" in this installation`, "", false},
		{"durable object class missing from the bundle", worker(map[string]any{"bindings": map[string]any{"durableObjects": []any{
			map[string]any{"binding": "OTHER", "target": "MissingDO"}}}}),
			`workers[0].bindings.durableObjects[0].target: the bundle`, "", false},

		// Artefacts.
		{"relative script climbing to /etc/passwd", worker(map[string]any{"script": escape}),
			"workers[0].script: the bundle of worker control-plane " + escape + " (/etc/passwd) resolves outside the checkout and the working directory", "", false},
		{"checkout bundle symlinked out of the checkout", upstream(map[string]any{"checkout": symlinked}),
			"upstream.checkout: the bundle of worker control-plane " + bundle, "", false},
		{"empty bundle", upstream(map[string]any{"workerBundles": map[string]any{"control-plane": empty}}),
			"upstream.workerBundles.control-plane: the bundle of worker control-plane: the script asset is empty", "", false},
		{"bundle for no worker", upstream(map[string]any{"workerBundles": map[string]any{"nope": outside}}),
			`upstream.workerBundles.nope: no worker "nope" in this installation`, "", false},
		{"missing bundle", upstream(map[string]any{"workerBundles": map[string]any{"slack-bot": filepath.Join(tmp, "nope.js")}}),
			"upstream.workerBundles.slack-bot: the bundle " + filepath.Join(tmp, "nope.js") + " of worker slack-bot is missing", "", false},
		{"migration without a number", upstream(map[string]any{"migrationsDir": migrations("unnumbered", map[string]string{"init.sql": "SELECT 1;"})}),
			"upstream.migrationsDir: in " + filepath.Join(tmp, "unnumbered") + ": init.sql: has no numeric prefix", "", false},
		{"migrations sharing a number", upstream(map[string]any{"migrationsDir": migrations("shared", map[string]string{"0001_a.sql": "SELECT 1;", "0001_b.sql": "SELECT 2;"})}),
			"0001_a.sql, 0001_b.sql: share the prefix 0001", "", false},
		{"migration with an upper-case extension", upstream(map[string]any{"migrationsDir": migrations("upper", map[string]string{"0001_a.sql": "SELECT 1;", "0002_b.SQL": "SELECT 2;"})}),
			"upstream.migrationsDir: in " + filepath.Join(tmp, "upper") + ": 0002_b.SQL: ends in .SQL, and upstream's runner takes only *.sql (lower case)", "", false},
		{"migration saved as UTF-16", upstream(map[string]any{"migrationsDir": migrations("utf16", map[string]string{"0001_a.sql": "\xff\xfeS\x00E\x00L\x00"})}),
			"upstream.migrationsDir: in " + filepath.Join(tmp, "utf16") + ": 0001_a.sql: holds a NUL byte at offset 3", "", false},
		{"no migrations", upstream(map[string]any{"migrationsDir": migrations("empty", map[string]string{"README.md": "none"})}),
			"upstream.migrationsDir: in " + filepath.Join(tmp, "empty") + ": no NNNN_*.sql migration files given", "", false},
		{"missing migrations directory", upstream(map[string]any{"migrationsDir": filepath.Join(tmp, "none")}),
			"upstream.migrationsDir: the D1 migrations directory " + filepath.Join(tmp, "none") + " is missing", "", false},
		{"migration symlinked to /etc/passwd", upstream(map[string]any{"migrationsDir": withSymlink}),
			"upstream.migrationsDir: the D1 migrations directory holds " + filepath.Join(withSymlink, "0002_passwd.sql") + " (/etc/passwd) resolves outside " + withSymlink, "", false},
		{"checkout not a directory", upstream(map[string]any{"checkout": outside}), fmt.Sprintf("upstream.checkout: %q is not a directory", outside), "", false},

		// Sandbox and web.
		{"sandbox provider", set("sandbox", map[string]any{"provider": "fly", "manage": false}), `sandbox.provider: must be modal, daytona, e2b, vercel or opencomputer, got "fly"`, "", false},
		{"vercel without token", set("sandbox", map[string]any{"provider": "vercel", "manage": false,
			"vercel": map[string]any{"projectId": "prj_1", "baseSnapshotId": "snap_1"}}),
			"sandbox.vercel.token: required with the vercel provider", "", false},
		{"vercel without project", set("sandbox", map[string]any{"provider": "vercel", "manage": false,
			"vercel": map[string]any{"token": secret("vt_00"), "baseSnapshotId": "snap_1"}}),
			"sandbox.vercel.projectId: required with the vercel provider", "", false},
		{"vercel runtime", set("sandbox", map[string]any{"provider": "vercel", "manage": false,
			"vercel": map[string]any{"token": secret("vt_00"), "projectId": "prj_1", "baseSnapshotId": "snap_1", "runtime": "node18"}}),
			`sandbox.vercel.runtime: "node18": one of node22, node24, python3.13`, "", false},
		{"vercel unmanaged without snapshot", set("sandbox", map[string]any{"provider": "vercel", "manage": false,
			"vercel": map[string]any{"token": secret("vt_00"), "projectId": "prj_1"}}),
			"sandbox.vercel.baseSnapshotId: required when sandbox.manage is false", "", false},
		{"opencomputer without api key", set("sandbox", map[string]any{"provider": "opencomputer", "manage": false,
			"opencomputer": map[string]any{"template": "t", "apiUrl": "https://oc.example/api"}}),
			"sandbox.opencomputer.apiKey: required with the opencomputer provider", "", false},
		{"opencomputer api url without /api", set("sandbox", map[string]any{"provider": "opencomputer", "manage": false,
			"opencomputer": map[string]any{"template": "t", "apiKey": secret("oc_00"), "apiUrl": "https://oc.example"}}),
			`sandbox.opencomputer.apiUrl: "https://oc.example" must end in /api`, "", false},
		{"opencomputer without api url", set("sandbox", map[string]any{"provider": "opencomputer", "manage": false,
			"opencomputer": map[string]any{"template": "t", "apiKey": secret("oc_00")}}),
			"sandbox.opencomputer.apiUrl: required with the opencomputer provider", "", false},
		{"opencomputer unmanaged without template", set("sandbox", map[string]any{"provider": "opencomputer", "manage": false,
			"opencomputer": map[string]any{"apiKey": secret("oc_00"), "apiUrl": "https://oc.example/api"}}),
			"sandbox.opencomputer.template: required when sandbox.manage is false", "", false},
		{"opencomputer builder memory", set("sandbox", map[string]any{"provider": "opencomputer", "manage": false,
			"opencomputer": map[string]any{"apiKey": secret("oc_00"), "apiUrl": "https://oc.example/api", "template": "t", "builderMemoryMb": 512}}),
			"sandbox.opencomputer.builderMemoryMb: must be at least 1024, got 512", "", false},
		{"e2b without api key", set("sandbox", map[string]any{"provider": "e2b", "manage": false, "e2b": map[string]any{"templateId": "t"}}),
			"sandbox.e2b.apiKey: required with the e2b provider", "", false},
		{"e2b unmanaged without template", set("sandbox", map[string]any{"provider": "e2b", "manage": false, "e2b": map[string]any{"apiKey": secret("e2b_00")}}),
			"sandbox.e2b.templateId: required when sandbox.manage is false", "", false},
		{"e2b odd memory", set("sandbox", map[string]any{"provider": "e2b", "manage": false, "e2b": map[string]any{"apiKey": secret("e2b_00"), "templateId": "t", "memoryMb": 4097}}),
			"sandbox.e2b.memoryMb: must be an even number of at least 512, got 4097", "", false},
		{"e2b api url scheme", set("sandbox", map[string]any{"provider": "e2b", "manage": false, "e2b": map[string]any{"apiKey": secret("e2b_00"), "templateId": "t", "apiUrl": "ftp://e2b.example"}}),
			`sandbox.e2b.apiUrl: "ftp://e2b.example" is not an http(s) URL`, "", false},
		{"daytona without api url", daytona(map[string]any{"apiKey": secret("k"), "baseSnapshot": "s"}), "sandbox.daytona.apiUrl: required", "", false},
		{"daytona api url scheme", daytona(map[string]any{"apiUrl": "ftp://daytona.example", "apiKey": secret("k"), "baseSnapshot": "s"}),
			`sandbox.daytona.apiUrl: "ftp://daytona.example" is not an http(s) URL`, "", false},
		{"inactivity timeout", set("sandbox", map[string]any{"manage": false, "inactivityTimeoutMs": 0}), "sandbox.inactivityTimeoutMs: must be positive, got 0", "", false},
		{"deploymentName given as a secret", set("deploymentName", secret("table-secret-name")),
			"deploymentName: must be a plain value known at preview, not a secret or another resource's output: every resource of the installation is named from it",
			"table-secret-name", false},
		{"appName from another resource's output", set("appName", property.New("Inspect").WithDependencies([]resource.URN{providertest.URN("random:index:RandomPet", "pet")})),
			"appName: must be a plain value known at preview, not a secret or another resource's output: it is compiled into the web build", "", false},
		{"webAppUrl unknown at preview", set("webAppUrl", property.New(property.Computed)),
			"webAppUrl: must be a plain value known at preview", "", true},
		{"fractional inactivity timeout", set("sandbox", map[string]any{"manage": false, "inactivityTimeoutMs": 1500.5}),
			"sandbox.inactivityTimeoutMs: must be a whole number, got 1500.5: write 1500 or 1501", "", false},
		{"inactivity timeout past int64", set("sandbox", map[string]any{"manage": false, "inactivityTimeoutMs": 1e20}),
			"sandbox.inactivityTimeoutMs: 1e+20 is too large: a whole number of at most 9007199254740992", "", false},
		{"modal environment", set("sandbox", map[string]any{"manage": false, "modal": map[string]any{"environment": "a/b"}}),
			`sandbox.modal.environment: "a/b" is not a name Modal accepts: Modal environment names are 2 to 64 characters`, "", false},
		// Issue 48: names Modal refuses, found at preview with no call
		// rather than by the NameLock preflight's lookup.
		{"modal environment of 300 characters", set("sandbox", map[string]any{"modal": map[string]any{"environment": strings.Repeat("e", 300)}}),
			"sandbox.modal.environment: " + `"` + strings.Repeat("e", 64) + `"… (300 characters) is 300 characters, which Modal refuses`, "", true},
		{"modal environment not ASCII", set("sandbox", map[string]any{"modal": map[string]any{"environment": "prodé"}}),
			`sandbox.modal.environment: "prodé" is not a name Modal accepts: Modal environment names are 2 to 64 characters, ASCII letters`, "", true},
		{"modal environment with a space", set("sandbox", map[string]any{"manage": false, "modal": map[string]any{"environment": "my env"}}),
			`sandbox.modal.environment: "my env" is not a name Modal accepts`, "", true},
		{"modal environment starting with a dot", set("sandbox", map[string]any{"modal": map[string]any{"environment": ".dev"}}),
			`sandbox.modal.environment: ".dev" is not a name Modal accepts: Modal environment names are 2 to 64 characters, ASCII letters, digits, '-', '_' and '.', starting with a letter or digit`, "", true},
		{"web image", set("web", map[string]any{"image": "", "namespace": "oi"}), "web.image: required", "", false},
		{"web system namespace", set("web", map[string]any{"image": "web:1", "namespace": "kube-system"}), `web.namespace: "kube-system" is a system namespace`, "", false},
	}
	// Issue 34: values a child's own rules refuse, and values that deployed
	// as given although they can never work.
	sandboxWith := func(provider string, settings map[string]any) func(m map[string]any) {
		return set("sandbox", map[string]any{"provider": provider, "manage": false, provider: settings})
	}
	cases = append(cases, []tableCase{
		{"observability sampling rate out of range", worker(map[string]any{"observability": map[string]any{"enabled": true, "headSamplingRate": 2}}),
			"workers[0].observability.headSamplingRate: 2 is not a sampling rate", "", false},
		{"observability logs sampling rate", worker(map[string]any{"observability": map[string]any{"enabled": true,
			"logs": map[string]any{"enabled": true, "headSamplingRate": -1}}}),
			"workers[0].observability.logs.headSamplingRate: -1 is not a sampling rate", "", true},
		{"app icon javascript url", set("appIconUrl", "javascript:alert(1)"), `appIconUrl: "javascript:alert(1)" is not an http(s) URL`, "", false},
		{"app icon data url", set("appIconUrl", "data:image/png;base64,AAAA"), `appIconUrl: "data:image/png;base64,AAAA" is not an http(s) URL`, "", false},
		{"app icon ftp url", set("appIconUrl", "ftp://example.com/logo.png"), `appIconUrl: "ftp://example.com/logo.png" is not an http(s) URL`, "", false},
		{"app icon not a url", set("appIconUrl", "logo dot png"), `appIconUrl: "logo dot png" is not an http(s) URL`, "", false},
		{"var named class", worker(map[string]any{"vars": map[string]any{"class": "x"}}),
			`workers[0].vars.class: "class" is a JavaScript reserved word`, "", false},
		{"var named default", worker(map[string]any{"vars": map[string]any{"default": "x"}}),
			`workers[0].vars.default: "default" is a JavaScript reserved word`, "", false},
		{"r2 binding named function", worker(map[string]any{"bindings": map[string]any{"r2": []any{
			map[string]any{"binding": "function", "target": "media"}}}}),
			`workers[0].bindings.r2[0].binding: "function" is a JavaScript reserved word`, "", false},
		{"secret named new", worker(map[string]any{"secrets": map[string]any{"new": secret("x")}}),
			`workers[0].secrets.new: "new" is a JavaScript reserved word`, "", false},
		{"daytona api url over plain http", sandboxWith("daytona", map[string]any{"apiUrl": "http://daytona.example/api", "apiKey": secret("dtn_secret_key"), "baseSnapshot": "s"}),
			`sandbox.daytona.apiUrl: "http://daytona.example/api" is plain http to another host`, "dtn_secret_key", false},
		{"e2b api url over plain http", sandboxWith("e2b", map[string]any{"apiUrl": "http://e2b.example", "apiKey": secret("e2b_00"), "templateId": "t"}),
			`sandbox.e2b.apiUrl: "http://e2b.example" is plain http to another host`, "", false},
		{"vercel api url over plain http", sandboxWith("vercel", map[string]any{"apiUrl": "http://vercel.example/api", "token": secret("vt_00"),
			"projectId": "prj_1", "baseSnapshotId": "snap_1"}), `sandbox.vercel.apiUrl: "http://vercel.example/api" is plain http to another host`, "", false},
		{"opencomputer api url over plain http", sandboxWith("opencomputer", map[string]any{"apiUrl": "http://oc.example/api", "apiKey": secret("oc_00"), "template": "t"}),
			`sandbox.opencomputer.apiUrl: "http://oc.example/api" is plain http to another host`, "", false},
		{"daytona snapshot with spaces", sandboxWith("daytona", map[string]any{"apiUrl": "https://daytona.example/api", "apiKey": secret("k"), "baseSnapshot": "my snapshot"}),
			`sandbox.daytona.baseSnapshot: "my snapshot": use letters`, "", false},
		{"daytona snapshot of 200 characters", sandboxWith("daytona", map[string]any{"apiUrl": "https://daytona.example/api", "apiKey": secret("k"),
			"baseSnapshot": strings.Repeat("s", 200)}), "sandbox.daytona.baseSnapshot: is 200 characters; at most 128", "", false},
		{"daytona target with punctuation", sandboxWith("daytona", map[string]any{"apiUrl": "https://daytona.example/api", "apiKey": secret("k"),
			"baseSnapshot": "s", "target": "us east!"}), `sandbox.daytona.target: "us east!": use letters`, "", false},
		{"e2b template with spaces", sandboxWith("e2b", map[string]any{"apiKey": secret("e2b_00"), "templateId": "my template"}),
			`sandbox.e2b.templateId: "my template": use lower-case letters`, "", false},
		{"e2b template of 200 characters", sandboxWith("e2b", map[string]any{"apiKey": secret("e2b_00"), "templateId": strings.Repeat("t", 200)}),
			"sandbox.e2b.templateId: is 200 characters; at most 128", "", false},
		{"opencomputer template with spaces", sandboxWith("opencomputer", map[string]any{"apiUrl": "https://oc.example/api", "apiKey": secret("oc_00"), "template": "my template"}),
			`sandbox.opencomputer.template: "my template": use letters`, "", false},
		{"vercel project with spaces", sandboxWith("vercel", map[string]any{"token": secret("vt_00"), "projectId": "my project", "baseSnapshotId": "snap_1"}),
			`sandbox.vercel.projectId: "my project": use letters`, "", false},
		// Issue 48: an apiUrl may be another resource's output, checked
		// once known; a secret could not stay one.
		{"daytona api url given as a secret", sandboxWith("daytona", map[string]any{"apiUrl": secret("https://daytona.example/private-api"),
			"apiKey": secret("k"), "baseSnapshot": "s"}),
			"sandbox.daytona.apiUrl: must not be a secret: it becomes the control plane's plain-text var DAYTONA_API_URL",
			"https://daytona.example/private-api", false},
		{"opencomputer api url a secret unknown at preview", sandboxWith("opencomputer", map[string]any{"apiUrl": unknownSecret,
			"apiKey": secret("oc_00"), "template": "t"}), "sandbox.opencomputer.apiUrl: must not be a secret", "", true},
		{"e2b api url from another resource's output over plain http", sandboxWith("e2b", map[string]any{
			"apiUrl": property.New("http://e2b.example").WithDependencies([]resource.URN{providertest.URN("test:index:Endpoint", "e2b")}),
			"apiKey": secret("e2b_00"), "templateId": "t"}), `sandbox.e2b.apiUrl: "http://e2b.example" is plain http to another host`, "", false},
		{"another provider's settings", set("sandbox", map[string]any{"provider": "modal", "manage": false,
			"daytona": map[string]any{"apiUrl": "https://daytona.example/api"}}),
			`sandbox.daytona: set, but sandbox.provider is "modal", so these settings would be ignored`, "", false},
		{"non-numeric app id", set("githubApp", map[string]any{"appId": "my-app", "installationId": "2", "privateKey": secret("-----BEGIN PRIVATE KEY-----x")}),
			`githubApp.appId: "my-app" is not a GitHub ID`, "-----BEGIN PRIVATE KEY-----x", false},
		{"app id as a fraction", set("githubApp", map[string]any{"appId": 1.5, "installationId": 2, "privateKey": secret("k")}),
			"githubApp.appId: must be a string, got the number 1.5", "", false},
		{"missing app id has a hint", set("githubApp", map[string]any{"installationId": "2", "privateKey": secret("k")}),
			"githubApp.appId: required: the GitHub App's numeric App ID", "", false},
		{"missing deployment name has a hint", func(m map[string]any) { delete(m, "deploymentName") },
			"deploymentName: required: the installation's unique name", "", false},
		{"missing daytona api key has a hint", sandboxWith("daytona", map[string]any{"apiUrl": "https://daytona.example/api", "baseSnapshot": "s"}),
			"sandbox.daytona.apiKey: required with the daytona provider: a Daytona API key", "", false},
		{"wildcard email domain", set("access", map[string]any{"allowedEmailDomains": "*"}),
			`access.allowedEmailDomains: "*" is not an e-mail domain`, "", false},
		{"web custom domain not a host", set("web", map[string]any{"platform": "cloudflare", "customDomain": map[string]any{"hostname": "not a host!", "zoneId": strings.Repeat("0", 32)}}),
			`web.customDomain.hostname: "not a host!" is not a lower-case hostname`, "", false},
		{"web custom domain over 253 characters", set("web", map[string]any{"platform": "cloudflare", "customDomain": map[string]any{
			"hostname": strings.Repeat("a.", 130) + "example.com", "zoneId": strings.Repeat("0", 32)}}),
			"web.customDomain.hostname: is 271 characters; a hostname has at most 253", "", false},
		// The web on Vercel: each field named, the token never quoted.
		{"web vercel without settings", set("web", map[string]any{"platform": "vercel"}),
			"web.vercel: required on platform \"vercel\": give token", "", false},
		{"web vercel team", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"), "teamId": "acme"}}),
			`web.vercel.teamId: "acme" is not a Vercel team ID`, "vercel-tok-table", false},
		{"web vercel team missing", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table")}}),
			"web.vercel.teamId: required: the Vercel team", "vercel-tok-table", false},
		{"web vercel token missing", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"teamId": "team_abc"}}),
			"web.vercel.token: required", "", false},
		{"web vercel empty token", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret(""), "teamId": "team_abc"}}),
			"web.vercel.token:", "", false},
		{"web vercel project name", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"),
			"teamId": "team_abc", "projectName": "Open Inspect"}}),
			`web.vercel.projectName: "Open Inspect" is not a Vercel project name`, "vercel-tok-table", false},
		{"web vercel api url", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"),
			"teamId": "team_abc", "apiUrl": "api.vercel.com"}}),
			`web.vercel.apiUrl: "api.vercel.com" is not an http(s) URL`, "vercel-tok-table", false},
		{"web vercel plain http api", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"),
			"teamId": "team_abc", "apiUrl": "http://api.vercel.example"}}),
			`web.vercel.apiUrl: "http://api.vercel.example" is plain http to another host: the Vercel token would travel unencrypted`, "vercel-tok-table", false},
		{"web vercel domain", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"),
			"teamId": "team_abc", "domain": "https://inspect.example.com"}}),
			`web.vercel.domain: "https://inspect.example.com" is not a lower-case hostname`, "vercel-tok-table", false},
		{"web vercel with a cloudflare field", set("web", map[string]any{"platform": "vercel", "bundleDir": "x",
			"vercel": map[string]any{"token": secret("vercel-tok-table"), "teamId": "team_abc"}}),
			`web.bundleDir: not for platform "vercel"`, "vercel-tok-table", false},
		{"web vercel settings on cloudflare", set("web", map[string]any{"platform": "cloudflare",
			"vercel": map[string]any{"token": secret("vercel-tok-table"), "teamId": "team_abc"}}),
			`web.vercel: only for platform "vercel"`, "vercel-tok-table", false},
		{"web vercel source without the web", set("web", map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("vercel-tok-table"),
			"teamId": "team_abc", "sourceDir": tmp}}),
			"web.vercel.sourceDir: " + tmp + " has no package.json, package-lock.json, packages/shared, packages/web, which Vercel's build of the web needs",
			"vercel-tok-table", false},
		{"web platform unknown", set("web", map[string]any{"platform": "netlify"}),
			`web.platform: must be "kubernetes", "cloudflare" or "vercel", got "netlify"`, "", false},
	}...)
	absentText["web custom domain not a host"] = "https://not a host!"
	absentText["web custom domain over 253 characters"] = "https://"
	cases = append(cases, gateCases(t, fixture, tmp, set, worker, upstream)...)
	require.GreaterOrEqual(t, len(cases), 100)

	construct := func(t *testing.T, spec map[string]any, preview bool) error {
		t.Helper()
		_, err := server.Construct(p.ConstructRequest{
			Urn:    providertest.URN(componentToken, "oi"),
			Inputs: providertest.Props(t, spec),
			DryRun: preview,
		})
		return err
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := validSpec(fixture)
			tc.modify(spec)
			err := construct(t, spec, tc.preview)
			require.Error(t, err, "the spec was accepted")
			msg := err.Error()
			assert.Contains(t, msg, tc.want)
			assert.Contains(t, msg, "invalid OpenInspect spec (nothing was changed)")
			assert.NotRegexp(t, goValue, msg, "a Go value is printed")
			if tc.secret != "" {
				assert.NotContains(t, msg, tc.secret, "the message quotes a secret")
			}
			if absent := absentText[tc.name]; absent != "" {
				assert.NotContains(t, msg, absent)
			}
			assert.Empty(t, rec.reset(), "nothing is registered")
			assert.Zero(t, h.Emu.CloudflareCalls(), "no Cloudflare call: %v", h.Emu.Counts())
			assert.Zero(t, h.Emu.Modal().Calls(), "no Modal call")
			assert.Zero(t, h.Emu.Daytona().Calls(), "no Daytona call")
			assert.Zero(t, h.Emu.Vercel().Calls(), "no Vercel call")
		})
	}

	// Issue 48: the same spec with the Daytona apiUrl another resource's
	// output not computed yet is planned at a preview, and its children
	// registered.
	t.Run("daytona api url unknown at preview is accepted", func(t *testing.T) {
		spec := validSpec(fixture)
		spec["sandbox"] = map[string]any{"provider": "daytona", "manage": false, "daytona": map[string]any{
			"apiUrl": property.New(property.Computed).WithDependencies([]resource.URN{providertest.URN("test:index:Endpoint", "daytona")}),
			"apiKey": secret("k"), "baseSnapshot": "s"}}
		// The mocks answer each child with its inputs, which the component's
		// outputs cannot all be made of: only the planning is looked at.
		if err := construct(t, spec, true); err != nil {
			assert.NotContains(t, err.Error(), "invalid OpenInspect spec")
		}
		assert.Contains(t, rec.reset(), cloudflare.WorkerToken, "the control plane is registered")
	})

	// The same harness sees a valid spec: the children are registered and the
	// database is created in the emulator, so the zeros above can fail.
	t.Run("valid spec reaches the emulator", func(t *testing.T) {
		_ = construct(t, validSpec(fixture), false)
		assert.Contains(t, rec.reset(), cloudflare.D1DatabaseToken)
		assert.NotZero(t, h.Emu.CloudflareCalls())
	})
}
