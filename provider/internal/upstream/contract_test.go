package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustLoad(t *testing.T) *Contract {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func mustWorker(t *testing.T, c *Contract, name string) *Worker {
	t.Helper()
	w := c.Worker(name)
	if w == nil {
		t.Fatalf("worker %q missing", name)
	}
	return w
}

func TestLoadAndValidate(t *testing.T) {
	c := mustLoad(t)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Upstream.Commit != UpstreamCommit() {
		t.Fatalf("commit %q, UPSTREAM_COMMIT %q", c.Upstream.Commit, UpstreamCommit())
	}
}

func TestParseIsStrict(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["surprise"] = true
	b, _ := json.Marshal(doc)
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Fatalf("unknown top-level field accepted: %v", err)
	}

	delete(doc, "surprise")
	workers := doc["workers"].([]any)
	workers[0].(map[string]any)["colour"] = "blue"
	b, _ = json.Marshal(doc)
	if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown nested field accepted: %v", err)
	}

	if _, err := Parse(append(Raw(), []byte(" {}")...)); err == nil {
		t.Fatal("trailing data accepted")
	}
}

func TestControlPlaneFacts(t *testing.T) {
	c := mustLoad(t)
	cp := mustWorker(t, c, "control-plane")

	if cp.When != "always" || cp.Bundle != "packages/control-plane/dist/index.js" || cp.MainModule != "index.js" {
		t.Errorf("control-plane: when %q bundle %q main %q", cp.When, cp.Bundle, cp.MainModule)
	}

	var crons []string
	for _, cr := range cp.Crons {
		crons = append(crons, cr.Schedule)
	}
	if want := []string{"* * * * *", "7,37 * * * *", "23 * * * *"}; !slices.Equal(crons, want) {
		t.Errorf("crons %q, want %q", crons, want)
	}

	if len(cp.QueueConsumers) != 1 {
		t.Fatalf("queue consumers: %+v", cp.QueueConsumers)
	}
	qc := cp.QueueConsumers[0]
	want := QueueConsumer{
		Queue: "image-build-finalization", DeadLetterQueue: "image-build-finalization-dlq",
		MaxBatchSize: 1, MaxWaitTimeMs: 1000, MaxConcurrency: 5, MaxRetries: 12, RetryDelaySeconds: 15,
	}
	if qc != want {
		t.Errorf("image-build-finalization consumer %+v, want %+v", qc, want)
	}

	if got := cp.Bindings.DurableObjects; len(got) != 1 || got[0].Binding != "SESSION" || got[0].ClassName != "SessionDO" {
		t.Errorf("durable object bindings %+v", got)
	}
	if got := cp.DurableObjectClasses; len(got) != 1 || got[0].ClassName != "SessionDO" || got[0].Storage != "sqlite" {
		t.Errorf("durable object classes %+v", got)
	}
	if got := cp.Bindings.D1; len(got) != 1 || got[0].Binding != "DB" {
		t.Errorf("d1 bindings %+v", got)
	}
	if got := cp.Bindings.KV; len(got) != 1 || got[0].Binding != "REPOS_CACHE" || got[0].Namespace != "session-index" {
		t.Errorf("kv bindings %+v", got)
	}
	if got := cp.Bindings.R2; len(got) != 1 || got[0].Binding != "MEDIA_BUCKET" || got[0].Bucket != "media" {
		t.Errorf("r2 bindings %+v", got)
	}

	if s := cp.Secret("BROWSER_AUTH_SECRET"); s == nil || s.Source.Input != "browserAuthSecret" {
		t.Errorf("BROWSER_AUTH_SECRET %+v", s)
	}
	if v := cp.Var("GITHUB_CLIENT_ID"); v == nil || v.When != "githubOAuth" || !v.Source.Trim {
		t.Errorf("GITHUB_CLIENT_ID %+v", v)
	}
}

func TestCompatibility(t *testing.T) {
	c := mustLoad(t)
	if c.Compatibility.Date != "2024-09-23" || !slices.Equal(c.Compatibility.Flags, []string{"nodejs_compat"}) {
		t.Errorf("compatibility %+v", c.Compatibility)
	}
	if !c.Compatibility.WorkersDev {
		t.Error("workersDev should default on")
	}
}

func TestServiceBindingsBothWays(t *testing.T) {
	c := mustLoad(t)
	cp := mustWorker(t, c, "control-plane")
	slack := mustWorker(t, c, "slack-bot")

	var toSlack *ServiceBinding
	for i := range cp.Bindings.Services {
		if cp.Bindings.Services[i].Worker == "slack-bot" {
			toSlack = &cp.Bindings.Services[i]
		}
	}
	if toSlack == nil || toSlack.Binding != "SLACK_BOT" || toSlack.When != "slack" {
		t.Errorf("control-plane → slack-bot binding %+v", toSlack)
	}
	if got := slack.Bindings.Services; len(got) != 1 || got[0].Binding != "CONTROL_PLANE" || got[0].Worker != "control-plane" {
		t.Errorf("slack-bot → control-plane binding %+v", got)
	}
	if slack.When != "slack" {
		t.Errorf("slack-bot when %q", slack.When)
	}
}

func TestSharedGeneratedSecrets(t *testing.T) {
	c := mustLoad(t)
	cp := mustWorker(t, c, "control-plane")
	for bot, cpName := range map[string]string{
		"slack-bot":  "SERVICE_AUTH_SECRET_SLACK_BOT",
		"github-bot": "SERVICE_AUTH_SECRET_GITHUB_BOT",
		"linear-bot": "SERVICE_AUTH_SECRET_LINEAR_BOT",
	} {
		own := mustWorker(t, c, bot).Secret("SERVICE_AUTH_SECRET")
		theirs := cp.Secret(cpName)
		if own == nil || theirs == nil || own.Source.Generated == "" || own.Source.Generated != theirs.Source.Generated {
			t.Errorf("%s: SERVICE_AUTH_SECRET %+v vs control-plane %s %+v", bot, own, cpName, theirs)
		}
	}
	// The web part signs with the generated serviceAuthSecretWeb.
	if s := cp.Secret("SERVICE_AUTH_SECRET_WEB"); s == nil || s.Source.Generated != "serviceAuthSecretWeb" {
		t.Errorf("control-plane SERVICE_AUTH_SECRET_WEB %+v is not the generated serviceAuthSecretWeb", s)
	}
	g := c.GeneratedSecret("serviceAuthSecretSlackBot")
	if g == nil || g.Length != 64 || g.Alphabet != AlphabetAlphanumeric {
		t.Errorf("serviceAuthSecretSlackBot %+v", g)
	}
}

func TestResourcesAndConditions(t *testing.T) {
	c := mustLoad(t)
	kv := map[string]string{}
	for _, ns := range c.KVNamespaces {
		kv[ns.Logical] = ns.When
	}
	if kv["session-index"] != "always" || kv["slack-kv"] != "slack" || kv["github-kv"] != "github" || kv["linear-kv"] != "linear" {
		t.Errorf("kv namespaces %v", kv)
	}
	if q := c.Queue("slack-completion"); q == nil || q.When != "slack" || q.DeadLetterQueue != "slack-completion-dlq" {
		t.Errorf("slack-completion %+v", q)
	}
	if len(c.R2Buckets) != 1 || c.R2Buckets[0].LocationHint == nil || c.R2Buckets[0].LocationHint.Input != "r2MediaLocation" {
		t.Errorf("r2 %+v", c.R2Buckets)
	}
	if in := c.Input("r2MediaLocation"); in == nil || in.DefaultString() != "ENAM" {
		t.Errorf("r2MediaLocation %+v", in)
	}

	d := c.Defaults()
	for cond, want := range map[string]bool{"slack": true, "github": false, "linear": false, "modal": true, "daytona": false} {
		got, err := c.Holds(cond, d, "")
		if err != nil || got != want {
			t.Errorf("Holds(%s) under defaults = %v, %v; want %v", cond, got, err, want)
		}
	}
	d.Inputs["githubClientId"] = " id "
	if ok, _ := c.Holds("githubOAuth", d, ""); ok {
		t.Error("githubOAuth holds with only the client ID")
	}
	d.Inputs["githubClientSecret"] = "s"
	if ok, _ := c.Holds("githubOAuth", d, ""); !ok {
		t.Error("githubOAuth does not hold with both halves")
	}
	if ok, _ := c.Holds("set", d, ""); ok {
		t.Error("set holds for an empty value")
	}
}

func TestResolve(t *testing.T) {
	c := mustLoad(t)
	cp := mustWorker(t, c, "control-plane")
	src := cp.Secret("PROVIDER_ACCOUNTS_ENCRYPTION_KEY").Source
	v := c.Defaults()
	v.Generated["providerAccountsEncryptionKey"] = "generated"
	if got, err := c.Resolve(src, v); err != nil || got != "generated" {
		t.Errorf("blank override: %q %v", got, err)
	}
	v.Inputs["providerAccountsEncryptionKey"] = "  supplied  "
	if got, err := c.Resolve(src, v); err != nil || got != "supplied" {
		t.Errorf("override: %q %v", got, err)
	}
	v.Derived["workerUrl:linear-bot"] = "https://lb"
	if got, _ := c.Resolve(mustWorker(t, c, "linear-bot").Var("WORKER_URL").Source, v); got != "https://lb" {
		t.Errorf("linear-bot WORKER_URL %q", got)
	}
	if got, _ := c.Resolve(cp.Var("UNSAFE_ALLOW_ALL_USERS").Source, v); got != "false" {
		t.Errorf("UNSAFE_ALLOW_ALL_USERS %q", got)
	}
	if got, _ := c.Resolve(cp.Var("SANDBOX_INACTIVITY_TIMEOUT_MS").Source, v); got != "600000" {
		t.Errorf("SANDBOX_INACTIVITY_TIMEOUT_MS %q", got)
	}
}

func TestNamingAndMigrations(t *testing.T) {
	c := mustLoad(t)
	n := c.Naming
	if n.DefaultPrefix != "open-inspect" || n.Pattern != "<prefix>-<logical>-<deploymentName>" {
		t.Errorf("naming %+v", n)
	}
	if got := n.Name(n.DefaultPrefix, "session-index", "acme"); got != "open-inspect-session-index-acme" {
		t.Errorf("Name = %q", got)
	}
	if e, ok := n.Exception("d1Database"); !ok || e.Pattern != "<prefix>-<deploymentName>" {
		t.Errorf("d1 exception %+v", e)
	}
	m := c.D1Migrations
	if m.FileCount != 66 || m.First != 1 || m.Last != 67 || !slices.Equal(m.Gaps, []int{46}) || m.Ledger.Table != "_schema_migrations" {
		t.Errorf("migrations %+v", m)
	}
}

func TestSandboxFacts(t *testing.T) {
	c := mustLoad(t)
	m := c.Sandbox.Modal
	var names []string
	for _, s := range m.Secrets {
		names = append(names, s.Name)
	}
	if m.AppName != "open-inspect" || !slices.Equal(names, []string{"llm-api-keys", "github-app", "internal-api"}) {
		t.Errorf("modal app %q secrets %v", m.AppName, names)
	}
	if got := m.Endpoints.URL(m.AppName, "ws", "", "api-health"); got != "https://ws--open-inspect-api-health.modal.run" {
		t.Errorf("modal URL %q", got)
	}
	if got := m.Endpoints.URL(m.AppName, "ws", "dev", "api-health"); got != "https://ws-dev--open-inspect-api-health.modal.run" {
		t.Errorf("modal URL with suffix %q", got)
	}
	tc := c.Sandbox.Daytona.Toolchain
	if c.Sandbox.Daytona.Snapshot.BaseImage != "python:3.12-slim-bookworm" || tc.OpencodeAI != "1.18.18" ||
		tc.CodeServer != "4.109.5" || tc.AgentBrowser != "0.21.2" || tc.Node != "22" {
		t.Errorf("daytona %+v %+v", c.Sandbox.Daytona.Snapshot, tc)
	}
}

// TestValidateReportsProblems mutates a loaded contract and checks that
// Validate names the worker (or section) and the field at fault.
func TestValidateReportsProblems(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *Contract)
		want   []string
	}{
		{
			name:   "dangling kv namespace",
			mutate: func(c *Contract) { c.Worker("control-plane").Bindings.KV[0].Namespace = "nope" },
			want:   []string{`worker "control-plane"`, "bindings.kv[0]", `"REPOS_CACHE"`, `namespace "nope"`},
		},
		{
			name:   "dangling r2 bucket",
			mutate: func(c *Contract) { c.Worker("control-plane").Bindings.R2[0].Bucket = "nope" },
			want:   []string{`worker "control-plane"`, "bindings.r2[0]", `bucket "nope"`},
		},
		{
			name:   "dangling queue producer",
			mutate: func(c *Contract) { c.Worker("slack-bot").Bindings.QueueProducers[0].Queue = "nope" },
			want:   []string{`worker "slack-bot"`, "bindings.queueProducers[0]", `queue "nope"`},
		},
		{
			name:   "dangling service",
			mutate: func(c *Contract) { c.Worker("github-bot").Bindings.Services[0].Worker = "nope" },
			want:   []string{`worker "github-bot"`, "bindings.services[0]", `worker "nope"`},
		},
		{
			name: "undeclared generated secret",
			mutate: func(c *Contract) {
				c.Worker("slack-bot").Secret("SERVICE_AUTH_SECRET").Source.Generated = "serviceAuthSecretNope"
			},
			want: []string{`worker "slack-bot"`, "secrets[3]", `"SERVICE_AUTH_SECRET"`, `generated "serviceAuthSecretNope" is not declared`},
		},
		{
			name:   "generated length mismatch",
			mutate: func(c *Contract) { c.Worker("control-plane").Secret("SERVICE_AUTH_SECRET_WEB").Source.Length = 32 },
			want:   []string{`worker "control-plane"`, `"SERVICE_AUTH_SECRET_WEB"`, "length 64, source says 32"},
		},
		{
			name:   "undeclared input",
			mutate: func(c *Contract) { c.Worker("linear-bot").Var("LINEAR_CLIENT_ID").Source.Input = "nope" },
			want:   []string{`worker "linear-bot"`, "vars[5]", `input "nope"`},
		},
		{
			name:   "undeclared derived",
			mutate: func(c *Contract) { c.Worker("control-plane").Var("WEB_APP_URL").Source.Derived = "nope" },
			want:   []string{`worker "control-plane"`, "vars[0]", `derived "nope"`},
		},
		{
			name: "source with two kinds",
			mutate: func(c *Contract) {
				c.Worker("control-plane").Var("APP_NAME").Source.Input = "appIconUrl"
			},
			want: []string{`worker "control-plane"`, `"APP_NAME"`, "exactly one of"},
		},
		{
			name: "duplicate binding name",
			mutate: func(c *Contract) {
				w := c.Worker("control-plane")
				w.Vars = append(w.Vars, EnvEntry{Name: "DB", Source: Source{Derived: "appName"}, When: "always"})
			},
			want: []string{`worker "control-plane"`, `vars[`, `"DB"`, "duplicate binding name", "bindings.d1[0]"},
		},
		{
			name:   "bad cron field count",
			mutate: func(c *Contract) { c.Worker("control-plane").Crons[1].Schedule = "7,37 * * *" },
			want:   []string{`worker "control-plane"`, "crons[1]", "5"},
		},
		{
			name:   "bad cron value",
			mutate: func(c *Contract) { c.Worker("control-plane").Crons[2].Schedule = "61 * * * *" },
			want:   []string{`worker "control-plane"`, "crons[2]", "minute"},
		},
		{
			// The one cron rule (internal/cron): Cloudflare's weekdays are 1-7.
			name:   "cron weekday 0",
			mutate: func(c *Contract) { c.Worker("control-plane").Crons[2].Schedule = "23 * * * 0" },
			want:   []string{`worker "control-plane"`, "crons[2]", "day of week"},
		},
		{
			name:   "durable object class missing",
			mutate: func(c *Contract) { c.Worker("control-plane").Bindings.DurableObjects[0].ClassName = "OtherDO" },
			want:   []string{`worker "control-plane"`, "bindings.durableObjects[0]", `"SESSION"`, `class "OtherDO"`},
		},
		{
			name: "consumer dead-letter mismatch",
			mutate: func(c *Contract) {
				c.Worker("control-plane").QueueConsumers[0].DeadLetterQueue = "slack-completion-dlq"
			},
			want: []string{`worker "control-plane"`, "queueConsumers[0]", "paired dead-letter queue"},
		},
		{
			name:   "consumer of an undeclared queue",
			mutate: func(c *Contract) { c.Worker("slack-bot").QueueConsumers[0].Queue = "nope" },
			want:   []string{`worker "slack-bot"`, "queueConsumers[0]", `queue "nope"`},
		},
		{
			name:   "consumer setting out of range",
			mutate: func(c *Contract) { c.Worker("control-plane").QueueConsumers[0].MaxBatchSize = 0 },
			want:   []string{`worker "control-plane"`, "queueConsumers[0]", "maxBatchSize"},
		},
		{
			name:   "binding outlives its target",
			mutate: func(c *Contract) { c.Worker("control-plane").Bindings.Services[0].When = "always" },
			want:   []string{`worker "control-plane"`, "bindings.services[0]", `worker "slack-bot" exists only when "slack"`},
		},
		{
			name:   "undeclared when",
			mutate: func(c *Contract) { c.Worker("control-plane").Var("DAYTONA_API_URL").When = "sometimes" },
			want:   []string{`worker "control-plane"`, `"DAYTONA_API_URL"`, `when "sometimes"`},
		},
		{
			name:   "broken dead-letter pairing",
			mutate: func(c *Contract) { c.Queue("slack-completion-dlq").DeadLetterFor = "" },
			want:   []string{`queues "slack-completion"`, "deadLetterFor"},
		},
		{
			name:   "commit differs from UPSTREAM_COMMIT",
			mutate: func(c *Contract) { c.Upstream.Commit = strings.Repeat("0", 40) },
			want:   []string{"upstream.commit", "UPSTREAM_COMMIT"},
		},
		{
			name: "condition default disagrees",
			mutate: func(c *Contract) {
				cond := c.Conditions["github"]
				yes := true
				cond.Default = &yes
				c.Conditions["github"] = cond
			},
			want: []string{`conditions "github"`, "evaluates to false"},
		},
		{
			name: "sandbox var missing from control plane",
			mutate: func(c *Contract) {
				c.Sandbox.Modal.ControlPlaneVars = append(c.Sandbox.Modal.ControlPlaneVars, "MODAL_NOPE")
			},
			want: []string{"sandbox.modal", `"MODAL_NOPE"`, `worker "control-plane"`},
		},
		{
			name: "sandbox provider without a condition",
			mutate: func(c *Contract) {
				d := c.DerivedValue("sandboxProvider")
				d.Allowed = append(d.Allowed, "nowhere")
			},
			want: []string{"derived sandboxProvider", `"nowhere"`},
		},
		{
			name:   "migration count inconsistent",
			mutate: func(c *Contract) { c.D1Migrations.FileCount = 67 },
			want:   []string{"d1Migrations.fileCount 67"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t)
			tc.mutate(c)
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			for _, p := range ve.Problems {
				if containsAll(p, tc.want) {
					return
				}
			}
			t.Fatalf("no problem mentions all of %q; got:\n%s", tc.want, err)
		})
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestCompatibilityDate: the accessor the Worker resource's default reads is
// the contract's compatibility.date.
func TestCompatibilityDate(t *testing.T) {
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := CompatibilityDate(); got != c.Compatibility.Date || !dateRE.MatchString(got) {
		t.Errorf("CompatibilityDate() = %q, contract has %q", got, c.Compatibility.Date)
	}
}

// TestParseRefusesAnotherSchemaVersion: a record in another format version is
// refused rather than half-read.
func TestParseRefusesAnotherSchemaVersion(t *testing.T) {
	raw := bytes.Replace(Raw(), []byte(`"schemaVersion": 1,`), []byte(`"schemaVersion": 2,`), 1)
	if bytes.Equal(raw, Raw()) {
		t.Fatal("contract.json has no schemaVersion 1 line")
	}
	if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), "schemaVersion 2") {
		t.Errorf("Parse = %v, want a schemaVersion error", err)
	}
}

// TestBindingsAllListsEveryKindInOrder: All names each binding's kind by its
// contract field and its target by the kind's own field, kind by kind in the
// order of Bindings' fields.
func TestBindingsAllListsEveryKindInOrder(t *testing.T) {
	b := Bindings{
		DurableObjects: []DurableObjectBinding{{Binding: "SESSION", ClassName: "SessionDO"}},
		Services:       []ServiceBinding{{Binding: "WEB", Worker: "web", When: "always"}},
		QueueProducers: []QueueBinding{{Binding: "Q", Queue: "jobs"}},
		R2:             []R2Binding{{Binding: "MEDIA", Bucket: "media"}},
		KV:             []KVBinding{{Binding: "KV1", Namespace: "one"}, {Binding: "KV2", Namespace: "two", When: "slack"}},
		D1:             []D1Binding{{Binding: "DB", Database: "main"}},
	}
	want := []Bound{
		{Kind: "d1", Binding: "DB", Target: "main"},
		{Kind: "kv", Binding: "KV1", Target: "one"},
		{Kind: "kv", Binding: "KV2", Target: "two", When: "slack"},
		{Kind: "r2", Binding: "MEDIA", Target: "media"},
		{Kind: "queueProducers", Binding: "Q", Target: "jobs"},
		{Kind: "services", Binding: "WEB", Target: "web", When: "always"},
		{Kind: "durableObjects", Binding: "SESSION", Target: "SessionDO"},
	}
	if got := b.All(); !slices.Equal(got, want) {
		t.Errorf("All() = %+v, want %+v", got, want)
	}
	if got := (Bindings{}).All(); len(got) != 0 {
		t.Errorf("All() of no bindings = %+v, want none", got)
	}
}
