package cloudflare

import (
	"maps"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The preview's message says whether an update uploads and why; the detailed
// diff names inputs only, and when no input moved but the upload happens
// anyway (an unfinished upload, a hash that differs) it names the input sent
// again, never the hash outputs, which the engine would render as removals.
func TestWorkerDiffSaysWhetherItUploads(t *testing.T) {
	deployed := WorkerArgs{
		Name: "oi-cp", Content: "export default {};", Vars: map[string]string{"APP_NAME": "Open Inspect"},
		Secrets: map[string]string{"TOKEN_ENCRYPTION_KEY": "old-secret-value"}, Crons: []string{"*/5 * * * *"},
	}
	hash, secretsHash, err := deployed.hashes()
	require.NoError(t, err)
	state := WorkerState{WorkerArgs: deployed, Hash: hash, SecretsHash: secretsHash}
	upd := p.PropertyDiff{Kind: p.Update, InputDiff: true}

	for _, tc := range []struct {
		name     string
		state    func(WorkerState) WorkerState
		edit     func(*WorkerArgs)
		detailed map[string]p.PropertyDiff
		message  string
	}{{
		name:     "var added",
		edit:     func(a *WorkerArgs) { a.Vars = map[string]string{"APP_NAME": "Open Inspect", "LOG_LEVEL": "debug"} },
		detailed: map[string]p.PropertyDiff{`vars["LOG_LEVEL"]`: {Kind: p.Add, InputDiff: true}},
		message:  "worker oi-cp: a new version is uploaded because of settings (vars LOG_LEVEL added)",
	}, {
		name:     "secret rotated and content changed",
		edit:     func(a *WorkerArgs) { a.Secrets = map[string]string{"TOKEN_ENCRYPTION_KEY": "new"}; a.Content += "\n" },
		detailed: map[string]p.PropertyDiff{"content": upd, `secrets["TOKEN_ENCRYPTION_KEY"]`: upd},
		message: "worker oi-cp: a new version is uploaded because of content (content); " +
			"secrets (secrets TOKEN_ENCRYPTION_KEY changed)",
	}, {
		name:     "cron only",
		edit:     func(a *WorkerArgs) { a.Crons = []string{"*/5 * * * *", "0 * * * *"} },
		detailed: map[string]p.PropertyDiff{"crons[1]": {Kind: p.Add, InputDiff: true}},
		message:  "worker oi-cp: no upload; only crons 0 * * * * added change",
	}, {
		name:     "var and cron",
		edit:     func(a *WorkerArgs) { a.Vars = nil; a.Crons = nil },
		detailed: map[string]p.PropertyDiff{`vars["APP_NAME"]`: {Kind: p.Delete, InputDiff: true}, "crons[0]": {Kind: p.Delete, InputDiff: true}},
		message: "worker oi-cp: a new version is uploaded because of settings (vars APP_NAME removed); " +
			"applied without the upload: crons */5 * * * * removed",
	}, {
		name:     "last upload unfinished",
		state:    func(s WorkerState) WorkerState { s.Hash = ""; return s },
		detailed: map[string]p.PropertyDiff{"content": upd},
		message:  "worker oi-cp: a new version is uploaded because of an unfinished last upload",
	}, {
		name:     "recorded hash differs",
		state:    func(s WorkerState) WorkerState { s.Hash = "0123456789abcdef"; return s },
		detailed: map[string]p.PropertyDiff{"content": upd},
		message: "worker oi-cp: a new version is uploaded because of content or settings that differ " +
			"from the last upload recorded (hash 0123456789ab)",
	}, {
		name:     "recorded secrets hash differs",
		state:    func(s WorkerState) WorkerState { s.SecretsHash = ""; return s },
		detailed: map[string]p.PropertyDiff{"secrets": upd},
		message:  "worker oi-cp: a new version is uploaded because of secret values that differ from the last upload recorded",
	}, {
		name:     "nothing",
		detailed: map[string]p.PropertyDiff{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := state
			if tc.state != nil {
				s = tc.state(s)
			}
			news := deployed
			news.Vars, news.Secrets, news.Crons = maps.Clone(deployed.Vars), maps.Clone(deployed.Secrets), slices.Clone(deployed.Crons)
			if tc.edit != nil {
				tc.edit(&news)
			}
			detailed, message, err := workerDiff(s, news)
			require.NoError(t, err)
			assert.Equal(t, tc.detailed, detailed)
			assert.Equal(t, tc.message, message)
			assert.NotContains(t, message, "old-secret-value")
			assert.NotContains(t, detailed, "hash")
			assert.NotContains(t, detailed, "secretsHash")
		})
	}
}

// A class that leaves the worker goes with a deleted_classes step, which
// deletes its objects' storage: the preview's message says so in words,
// with the tags the upload moves between.
func TestWorkerDiffNamesTheDurableObjectMigration(t *testing.T) {
	session, scheduler := DurableObjectBinding{Binding: "SESSION", ClassName: "SessionDO"}, DurableObjectBinding{Binding: "SCHEDULER", ClassName: "SchedulerDO"}
	deployed := WorkerArgs{Name: "oi-cp", Content: "export default {};", DurableObjects: []DurableObjectBinding{session, scheduler}}
	hash, secretsHash, err := deployed.hashes()
	require.NoError(t, err)
	state := WorkerState{WorkerArgs: deployed, Hash: hash, SecretsHash: secretsHash, MigrationTag: "v1", DurableObjectClasses: []string{"SchedulerDO", "SessionDO"}}

	news := deployed
	news.DurableObjects = []DurableObjectBinding{session}
	detailed, message, err := workerDiff(state, news)
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"durableObjects[1]": {Kind: p.Delete, InputDiff: true}}, detailed)
	assert.Equal(t, "worker oi-cp: a new version is uploaded because of settings (durableObjects SCHEDULER removed); "+
		"with the Durable Object migration v1 -> v2: deleted_classes SchedulerDO (every object of the class is deleted with its storage)", message)

	news.DurableObjects = []DurableObjectBinding{session, scheduler, {Binding: "ROOMS", ClassName: "RoomDO"}}
	_, message, err = workerDiff(state, news)
	require.NoError(t, err)
	assert.Equal(t, "worker oi-cp: a new version is uploaded because of settings (durableObjects ROOMS added); "+
		"with the Durable Object migration v1 -> v2: new_sqlite_classes RoomDO", message)

	// A binding to another script's class migrates nothing here.
	news.DurableObjects = []DurableObjectBinding{session, scheduler, {Binding: "OTHER", ClassName: "OtherDO", ScriptName: "oi-other"}}
	_, message, err = workerDiff(state, news)
	require.NoError(t, err)
	assert.Equal(t, "worker oi-cp: a new version is uploaded because of settings (durableObjects OTHER added)", message)
}
