package engine

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
)

// previewProgram is what TestPreviewNamesEveryChange deploys; each case
// edits a copy of it and previews the result against the deployed stack.
type previewProgram struct {
	migrations map[string]string
	vars       map[string]string
	secret     string
	bindSecond bool   // the DB binding targets the second database
	secondName string // the second database's name ("" is oi-preview-db2)
	crons      []string
}

func (pp previewProgram) run(ctx *pulumi.Context) error {
	first, err := openinspect.NewD1Database(ctx, "db", &openinspect.D1DatabaseArgs{Name: pulumi.String("oi-preview-db")})
	if err != nil {
		return err
	}
	secondName := pp.secondName
	if secondName == "" {
		secondName = "oi-preview-db2"
	}
	second, err := openinspect.NewD1Database(ctx, "db2", &openinspect.D1DatabaseArgs{Name: pulumi.String(secondName)})
	if err != nil {
		return err
	}
	if _, err := openinspect.NewD1Migrations(ctx, "migrations", &openinspect.D1MigrationsArgs{
		DatabaseId: first.DatabaseId,
		Migrations: pulumi.ToStringMap(pp.migrations),
	}); err != nil {
		return err
	}
	target := first.DatabaseId
	if pp.bindSecond {
		target = second.DatabaseId
	}
	_, err = openinspect.NewWorker(ctx, "worker", &openinspect.WorkerArgs{
		Name:        pulumi.String("oi-preview-worker"),
		Content:     pulumi.String("export default { async fetch() { return new Response('ok'); } };\n"),
		D1Databases: openinspect.D1BindingArray{openinspect.D1BindingArgs{Binding: pulumi.String("DB"), DatabaseId: target}},
		Vars:        pulumi.ToStringMap(pp.vars),
		Secrets:     pulumi.ToSecret(pulumi.StringMap{"TOKEN_ENCRYPTION_KEY": pulumi.String(pp.secret)}).(pulumi.StringMapOutput),
		Crons:       pulumi.ToStringArray(pp.crons),
	})
	return err
}

// previewResult is what one preview showed: the detailed diffs by resource
// name, for the resources it would change.
type previewResult struct {
	diffs  map[string]map[string]apitype.PropertyDiff
	stdout string // the --diff rendering, as a reviewer reads it
	events string // every engine event, as JSON
	// diagnostics are the messages the provider logged for the changed
	// resources (why an upload happens, which files apply).
	diagnostics []string
}

// TestPreviewNamesEveryChange runs the engine's preview (the Automation
// API's events and its --diff rendering) on the changes a reviewer reads
// most, against a deployed stack, and checks the exact detailed-diff entries
// and that no secret value appears anywhere in what preview shows.
func TestPreviewNamesEveryChange(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	const oldSecret, newSecret = "preview-secret-before-0f3a", "preview-secret-after-9c1d"
	base := previewProgram{
		migrations: map[string]string{
			"0001_sessions.sql": "CREATE TABLE sessions (id TEXT PRIMARY KEY);",
		},
		vars:   map[string]string{"APP_NAME": "Open Inspect"},
		secret: oldSecret,
		crons:  []string{"*/5 * * * *"},
	}
	current := base
	stack := newInlineStack(t, "preview", func(ctx *pulumi.Context) error { return current.run(ctx) })
	configureStack(t, &stack, emu)
	_, err := previewUpStack(t.Context(), t, stack)
	require.NoError(t, err)

	preview := func(t *testing.T, pp previewProgram) previewResult {
		t.Helper()
		current = pp
		defer func() { current = base }()
		ch := make(chan events.EngineEvent)
		var all []events.EngineEvent
		done := make(chan struct{})
		go func() {
			for e := range ch {
				all = append(all, e)
			}
			close(done)
		}()
		var out bytes.Buffer
		emu.resetCounts(t)
		_, err := stack.Preview(t.Context(), optpreview.Diff(), optpreview.EventStreams(ch), optpreview.ProgressStreams(&out))
		require.NoError(t, err)
		<-done
		calls, counts := emu.cloudflareCalls(t)
		assert.Zero(t, calls, "an update's preview plans from state: %v", counts)
		res := previewResult{diffs: map[string]map[string]apitype.PropertyDiff{}, stdout: out.String()}
		raw, err := json.Marshal(all)
		require.NoError(t, err)
		res.events = string(raw)
		for _, e := range all {
			if d := e.DiagnosticEvent; d != nil && d.URN != "" {
				res.diagnostics = append(res.diagnostics, d.Severity+": "+strings.TrimSpace(d.Message))
			}
			if e.ResourcePreEvent == nil {
				continue
			}
			md := e.ResourcePreEvent.Metadata
			if md.Op == apitype.OpSame {
				continue
			}
			name := md.URN[strings.LastIndex(md.URN, "::")+2:]
			res.diffs[name] = md.DetailedDiff
		}
		for _, secret := range []string{oldSecret, newSecret} {
			// Not assert.NotContains: it would print the output, secret included.
			assert.False(t, strings.Contains(res.stdout, secret) || strings.Contains(res.events, secret), "a secret value appears in the preview")
		}
		t.Logf("provider messages: %q", res.diagnostics)
		return res
	}
	// Every entry is an input: an output (the worker's hash) would render
	// as a removal, since the engine shows the diff before the update runs.
	upd := apitype.PropertyDiff{Kind: apitype.DiffUpdate, InputDiff: true}
	add := apitype.PropertyDiff{Kind: apitype.DiffAdd, InputDiff: true}

	t.Run("new migration", func(t *testing.T) {
		pp := base
		pp.migrations = maps.Clone(base.migrations)
		pp.migrations["0002_labels.sql"] = "CREATE TABLE labels (id TEXT PRIMARY KEY);"
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"migrations": {`files["0002_labels.sql"]`: add},
		}, res.diffs)
		assert.Equal(t, []string{"info: 1 migration(s) will be applied, in order: 0002_labels.sql"}, res.diagnostics)
	})
	t.Run("applied file edited", func(t *testing.T) {
		pp := base
		pp.migrations = map[string]string{"0001_sessions.sql": "-- reformatted\n" + base.migrations["0001_sessions.sql"]}
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"migrations": {`files["0001_sessions.sql"]`: upd},
		}, res.diffs)
		require.Len(t, res.diagnostics, 1)
		assert.Regexp(t, `^warning: 0001_sessions.sql was applied \(version 0001, .*\): it will not be applied again`, res.diagnostics[0])
	})
	t.Run("worker var added", func(t *testing.T) {
		pp := base
		pp.vars = map[string]string{"APP_NAME": "Open Inspect", "LOG_LEVEL": "debug"}
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"worker": {`vars["LOG_LEVEL"]`: add},
		}, res.diffs)
		assert.Equal(t, []string{"info: worker oi-preview-worker: a new version is uploaded because of settings (vars LOG_LEVEL added)"}, res.diagnostics)
	})
	t.Run("secret rotated", func(t *testing.T) {
		pp := base
		pp.secret = newSecret
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"worker": {`secrets["TOKEN_ENCRYPTION_KEY"]`: upd},
		}, res.diffs)
		assert.Equal(t, []string{"info: worker oi-preview-worker: a new version is uploaded because of secrets (secrets TOKEN_ENCRYPTION_KEY changed)"}, res.diagnostics)
	})
	t.Run("binding retargeted", func(t *testing.T) {
		pp := base
		pp.bindSecond = true
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"worker": {"d1Databases[0]": upd},
		}, res.diffs)
		assert.Equal(t, []string{"info: worker oi-preview-worker: a new version is uploaded because of settings (d1Databases DB changed)"}, res.diagnostics)
	})
	t.Run("cron changed", func(t *testing.T) {
		pp := base
		pp.crons = []string{"*/10 * * * *"}
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"worker": {"crons[0]": upd},
		}, res.diffs)
		assert.Equal(t, []string{"info: worker oi-preview-worker: no upload; only crons */10 * * * * added, crons */5 * * * * removed change"}, res.diagnostics)
	})
	t.Run("database renamed", func(t *testing.T) {
		pp := base
		pp.secondName = "oi-preview-db3"
		res := preview(t, pp)
		assert.Equal(t, []string{"db2"}, slices.Collect(maps.Keys(res.diffs)), "only the renamed database changes")
		assert.Regexp(t, `\+-\s*openinspect:index:D1Database: \(replace\)`, res.stdout)
		assert.Regexp(t, `name\s*: "oi-preview-db2" => "oi-preview-db3"`, res.stdout)
		assert.Equal(t, []string{"info: replaces: name: D1 cannot rename a database: a new, empty database is created and the old one deleted with its data"},
			res.diagnostics)
	})
	t.Run("typical upgrade", func(t *testing.T) {
		pp := base
		pp.migrations = maps.Clone(base.migrations)
		pp.migrations["0002_labels.sql"] = "CREATE TABLE labels (id TEXT PRIMARY KEY);"
		pp.vars = map[string]string{"APP_NAME": "Open Inspect", "LOG_LEVEL": "debug"}
		pp.secret = newSecret
		res := preview(t, pp)
		assert.Equal(t, map[string]map[string]apitype.PropertyDiff{
			"migrations": {`files["0002_labels.sql"]`: add},
			"worker":     {`vars["LOG_LEVEL"]`: add, `secrets["TOKEN_ENCRYPTION_KEY"]`: upd},
		}, res.diffs)
		// What a reviewer reads for the worker: the var and the secret by
		// name, the secret's value hidden, and no output shown as removed.
		// The section ends at the next resource or the summary: the engine
		// prints the steps in the order they finish.
		worker := res.stdout[strings.Index(res.stdout, "openinspect:index:Worker"):]
		worker = worker[strings.Index(worker, "\n  ")+1 : strings.Index(worker, "Resources:")]
		var lines []string
		for _, l := range strings.Split(worker, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "~ openinspect:") || strings.HasPrefix(l, "+ openinspect:") || strings.HasPrefix(l, "+-openinspect:") {
				break
			}
			if l != "" && !strings.HasPrefix(l, "[") {
				lines = append(lines, l)
			}
		}
		assert.Equal(t, []string{
			"~ secrets: {", "~ TOKEN_ENCRYPTION_KEY: [secret] => [secret]", "}",
			"~ vars   : {", `+ LOG_LEVEL: "debug"`, "}",
		}, lines)
		t.Logf("pulumi preview --diff:\n%s", res.stdout)
	})
}
