package cloudflare

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// Defaults of Worker.ServiceTargetWait and Worker.ServiceTargetPoll.
const (
	defaultServiceTargetWait = 3 * time.Minute
	defaultServiceTargetPoll = time.Second
)

// targetWait and targetPoll are the worker's wait settings with defaults applied.
func (w *Worker) targetWait() time.Duration {
	if w.ServiceTargetWait > 0 {
		return w.ServiceTargetWait
	}
	return defaultServiceTargetWait
}

func (w *Worker) targetPoll() time.Duration {
	if w.ServiceTargetPoll > 0 {
		return w.ServiceTargetPoll
	}
	return defaultServiceTargetPoll
}

// Create uploads the script (or adopts an existing one when asked to), then
// sets its triggers, route and consumers.
func (w *Worker) Create(ctx context.Context, req infer.CreateRequest[WorkerArgs]) (infer.CreateResponse[WorkerState], error) {
	if req.DryRun {
		if req.Inputs.needsAccount() || len(req.Inputs.Services) > 0 {
			if err := previewAgainstAccount(ctx, req.Inputs); err != nil {
				return infer.CreateResponse[WorkerState]{}, err
			}
		}
		return infer.CreateResponse[WorkerState]{Output: WorkerState{WorkerArgs: req.Inputs}}, nil
	}
	// Nothing is applied yet: deploy records each step in state as it lands.
	var state WorkerState
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return infer.CreateResponse[WorkerState]{}, err
	}
	defer w.board().createStarted(client.AccountID(), req.Inputs.Name)()
	if err := req.Inputs.preflight(ctx, client, nil, false); err != nil {
		return infer.CreateResponse[WorkerState]{}, err
	}
	_, adopted, err := claim[cfapi.Script]{
		kind: "worker", name: req.Inputs.Name,
		adopt: req.Inputs.AdoptExisting, accountID: client.AccountID(), ownership: req.Inputs.Ownership,
		find: func(ctx context.Context) (cfapi.Script, bool, error) {
			return client.GetScript(ctx, req.Inputs.Name)
		},
		// The owner is a script tag, replaced by the upload below.
		evidence: func(ctx context.Context, s cfapi.Script) (string, bool, error) {
			settings, err := client.GetScriptSettings(ctx, s.Name)
			return ownerFromTags(settings.Tags), false, err
		},
		// The upload below creates the script.
		create: func(context.Context) (cfapi.Script, error) { return cfapi.Script{Name: req.Inputs.Name}, nil },
		id:     func(s cfapi.Script) string { return s.Name },
	}.run(ctx)
	if err != nil {
		return infer.CreateResponse[WorkerState]{}, err
	}
	state.Adopted = adopted
	if adopted {
		settings, err := client.GetScriptSettings(ctx, req.Inputs.Name)
		if err != nil {
			return infer.CreateResponse[WorkerState]{}, err
		}
		// Continue the adopted script's migrations from its tag and classes.
		state.MigrationTag = settings.MigrationTag
		state.DurableObjectClasses = argsFromSettings(req.Inputs.Name, settings).ownClasses()
	}
	state, err = w.deploy(ctx, client, req.Inputs, state, true)
	if err != nil && state.Etag == "" {
		// Workers waiting to bind this one stop now rather than at their deadline.
		w.board().createFailed(client.AccountID(), req.Inputs.Name, err)
	}
	if err != nil && state.Etag != "" {
		// The script exists; keep what was done so the next up finishes it.
		return infer.CreateResponse[WorkerState]{ID: req.Inputs.Name, Output: state},
			fmt.Errorf("%w: %w", infer.ResourceInitFailedError{Reasons: []string{err.Error()}}, err)
	}
	return infer.CreateResponse[WorkerState]{ID: req.Inputs.Name, Output: state}, err
}

// previewAgainstAccount is a create's preview of the rules only the account
// decides: the refusals (preflight), then the warnings for tail consumers and
// service targets that nothing is known to create.
func previewAgainstAccount(ctx context.Context, a WorkerArgs) error {
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return err
	}
	if err := a.preflight(ctx, client, nil, true); err != nil {
		return err
	}
	tails, err := a.missingTailConsumers(ctx, client)
	if err != nil {
		return fmt.Errorf("checking worker %s against the account: %w", a.Name, err)
	}
	targets, err := a.missingServiceTargets(ctx, client)
	if err != nil {
		return fmt.Errorf("checking worker %s against the account: %w", a.Name, err)
	}
	for _, w := range append(tails, targets...) {
		p.GetLogger(ctx).Warning(w)
	}
	return nil
}

// Update re-uploads only when the content hash moved, and touches triggers,
// route and consumers only when they changed.
func (w *Worker) Update(ctx context.Context, req infer.UpdateRequest[WorkerArgs, WorkerState]) (infer.UpdateResponse[WorkerState], error) {
	if req.DryRun {
		// An update's preview plans from state and makes no call; the
		// update checks what it changes before its first mutating call.
		state := req.State
		state.WorkerArgs = req.Inputs
		return infer.UpdateResponse[WorkerState]{Output: state}, nil
	}
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.UpdateResponse[WorkerState]{}, err
	}
	if err := req.Inputs.preflight(ctx, client, &req.State.WorkerArgs, false); err != nil {
		return infer.UpdateResponse[WorkerState]{}, err
	}
	state, err := w.deploy(ctx, client, req.Inputs, req.State, false)
	if err != nil {
		return infer.UpdateResponse[WorkerState]{Output: state},
			fmt.Errorf("%w: %w", infer.ResourceInitFailedError{Reasons: []string{err.Error()}}, err)
	}
	return infer.UpdateResponse[WorkerState]{Output: state}, nil
}

// deploy brings the remote script to args. prior is the state before. The
// returned state takes each group of inputs from args only once the step
// applying it succeeded, so after a failure the next diff shows exactly the
// steps still to do.
func (w *Worker) deploy(ctx context.Context, client *cfapi.Client, args WorkerArgs, prior WorkerState, creating bool) (WorkerState, error) {
	state := prior
	state.AccountID = client.AccountID()
	state.Name, state.AdoptExisting = args.Name, args.AdoptExisting
	if creating {
		// The route is not switched on yet, whatever the default says.
		state.WorkersDev = new(false)
	}
	hash, secretsHash, err := args.hashes()
	if err != nil {
		return state, err
	}
	if creating || hash != prior.Hash || secretsHash != prior.SecretsHash {
		script, err := w.upload(ctx, client, args, &state)
		if err != nil {
			state.Hash = "" // the next up uploads again
			return state, err
		}
		applied := state.WorkerArgs
		state.WorkerArgs = args
		state.Crons, state.WorkersDev, state.QueueConsumers = applied.Crons, applied.WorkersDev, applied.QueueConsumers
		state.Domains, state.Routes = applied.Domains, applied.Routes
		state.Etag, state.Hash, state.SecretsHash = script.Etag, hash, secretsHash
	}
	if !slices.Equal(state.Crons, args.Crons) {
		if err := client.SetSchedules(ctx, args.Name, args.Crons); err != nil {
			return state, err
		}
		state.Crons = args.Crons
	}
	wantDev := args.WorkersDev == nil || *args.WorkersDev
	if creating || wantDev != (state.WorkersDev == nil || *state.WorkersDev) {
		if err := client.SetWorkersDev(ctx, args.Name, wantDev); err != nil {
			return state, err
		}
		state.WorkersDev = args.WorkersDev
		state.URL = ""
		if wantDev {
			url, err := config.FromContext(ctx).WorkerURL(ctx, client, args.Name)
			if err != nil {
				return state, err
			}
			state.URL = url
		}
	}
	if !reflect.DeepEqual(normalizeEmpty(reflect.ValueOf(state.QueueConsumers)), normalizeEmpty(reflect.ValueOf(args.QueueConsumers))) {
		ids, err := reconcileConsumers(ctx, client, args, prior.ConsumerIDs)
		state.ConsumerIDs = ids
		if err != nil {
			return state, err
		}
		state.QueueConsumers = args.QueueConsumers
	}
	if creating || differ(state.Domains, args.Domains) || differ(state.Routes, args.Routes) {
		routing, err := reconcileRouting(ctx, client, args, state.WorkerRouting)
		state.WorkerRouting = routing
		if err != nil {
			return state, err
		}
		state.Domains, state.Routes = args.Domains, args.Routes
	}
	return state, nil
}

// upload sends the script with its migrations, recovering from a moved
// migration tag and from service binding targets that do not exist yet.
func (w *Worker) upload(ctx context.Context, client *cfapi.Client, args WorkerArgs, state *WorkerState) (cfapi.Script, error) {
	modules, err := args.uploadModules()
	if err != nil {
		return cfapi.Script{}, err
	}
	assets, err := syncAssets(ctx, client, args)
	if err != nil {
		return cfapi.Script{}, err
	}
	classes := args.ownClasses()
	migration := planMigration(state.MigrationTag, state.DurableObjectClasses, classes)
	skip := map[string]bool{}
	send := func() (cfapi.Script, error) {
		script, err := client.UploadScript(ctx, cfapi.ScriptUpload{
			Name: args.Name, MainModule: args.mainModule(), Modules: modules,
			CompatibilityDate: args.CompatibilityDate, CompatibilityFlags: args.CompatibilityFlags,
			Bindings: args.bindings(skip), Migrations: migration, Tags: args.scriptTags(), Config: args.scriptConfig(), Assets: assets.script(),
		})
		if err == nil {
			w.board().uploaded(client.AccountID(), args.Name)
		}
		return script, err
	}
	applied := func() {
		if migration != nil {
			state.MigrationTag = migration.NewTag
			migration = nil
		}
		state.DurableObjectClasses = classes
		state.recordAssets(assets)
	}

	script, err := send()
	if cfapi.HasCode(err, cfapi.CodeMigrationTagPrecondition) {
		script, err = continueFromCurrentTag(ctx, client, args, state, migration, send)
	}
	if cfapi.HasCode(err, cfapi.CodeClassAlreadyDeclared) && migration != nil {
		// The script already declares the classes (adopted, or state lost):
		// there is nothing to migrate.
		migration = nil
		script, err = send()
	}
	// A target may appear between the failed upload and the look-up (the
	// other worker of a pair uploading at the same moment), so this loops.
	for attempt := 0; attempt < 3 && unresolvedService(err); attempt++ {
		missing, lerr := missingServices(ctx, client, args)
		if lerr != nil {
			return cfapi.Script{}, lerr
		}
		if len(missing) == 0 {
			script, err = send()
			continue
		}
		// Upload without the missing bindings so this script exists for
		// workers that bind it, then add them once their targets exist.
		for _, m := range missing {
			skip[m] = true
		}
		p.GetLogger(ctx).Infof("worker %s: service binding targets %s do not exist yet; uploading without them and waiting",
			args.Name, strings.Join(missing, ", "))
		for _, m := range missing {
			if !plannedScripts.has(m) {
				p.GetLogger(ctx).Warningf("worker %s: no worker of this program is named %s; unless something else creates it, "+
					"this up fails in %s", args.Name, m, w.targetWait())
			}
		}
		if script, err = send(); err != nil {
			return cfapi.Script{}, err
		}
		applied()
		state.Etag = script.Etag
		if err := w.waitForScripts(ctx, client, missing); err != nil {
			return script, fmt.Errorf("worker %s was uploaded without its service bindings to %s: %w",
				args.Name, strings.Join(missing, ", "), err)
		}
		clear(skip)
		// The upload used the assets' completion token up: a new session
		// (nothing left to send) gives the next one its own.
		if assets, err = syncAssets(ctx, client, args); err != nil {
			return script, err
		}
		script, err = send()
	}
	if err != nil {
		return cfapi.Script{}, err
	}
	applied()
	return script, nil
}

// continueFromCurrentTag handles error 10079: the script's migration tag is
// not the one this stack recorded (it was deployed by another tool, or state
// was lost). The script's own tag is read and the migration retried from it.
func continueFromCurrentTag(ctx context.Context, client *cfapi.Client, args WorkerArgs, state *WorkerState,
	migration *cfapi.Migration, send func() (cfapi.Script, error),
) (cfapi.Script, error) {
	settings, err := client.GetScriptSettings(ctx, args.Name)
	if err != nil {
		return cfapi.Script{}, err
	}
	p.GetLogger(ctx).Warningf("worker %s: Durable Object migration tag is %q, not %q as recorded; continuing from it",
		args.Name, settings.MigrationTag, state.MigrationTag)
	state.MigrationTag = settings.MigrationTag
	if migration != nil {
		migration.OldTag = settings.MigrationTag
		migration.NewTag = nextTag(settings.MigrationTag)
	}
	return send()
}

// planMigration is the single migration step from the recorded classes to the
// wanted ones, or nil when they match. Only new_sqlite_classes are used:
// free plans reject new_classes.
func planMigration(tag string, have, want []string) *cfapi.Migration {
	var added, removed []string
	for _, c := range want {
		if !slices.Contains(have, c) {
			added = append(added, c)
		}
	}
	for _, c := range have {
		if !slices.Contains(want, c) {
			removed = append(removed, c)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	return &cfapi.Migration{OldTag: tag, NewTag: nextTag(tag), NewSqliteClasses: added, DeletedClasses: removed}
}

var versionTag = regexp.MustCompile(`^v(\d+)$`)

// nextTag continues v1, v2, ... and suffixes any other scheme.
func nextTag(tag string) string {
	if tag == "" {
		return "v1"
	}
	if m := versionTag.FindStringSubmatch(tag); m != nil {
		n, _ := strconv.Atoi(m[1])
		return fmt.Sprintf("v%d", n+1)
	}
	return tag + "-1"
}

func unresolvedService(err error) bool {
	return cfapi.HasCode(err, cfapi.CodeServiceBindingUnresolved) || cfapi.HasCode(err, cfapi.CodeServiceBindingNotFound)
}

// missingServices are the service binding targets that do not exist.
func missingServices(ctx context.Context, client *cfapi.Client, args WorkerArgs) ([]string, error) {
	var missing []string
	for _, s := range args.Services {
		if s.Service == args.Name || slices.Contains(missing, s.Service) {
			continue
		}
		_, found, err := client.GetScript(ctx, s.Service)
		if err != nil {
			return nil, err
		}
		if !found {
			missing = append(missing, s.Service)
		}
	}
	return missing, nil
}

// waitForScripts waits until every named script exists. It wakes when a
// worker of this process uploads (no poll interval between a target's
// upload and this worker's), polls the API for targets made elsewhere, and
// stops at once when a target's create failed in this process.
func (w *Worker) waitForScripts(ctx context.Context, client *cfapi.Client, names []string) error {
	deadline := time.Now().Add(w.targetWait())
	board := w.board()
	// A target this process creates wakes the wait through the board; the
	// polls are for targets made elsewhere, so they back off to a tenth of
	// the rate, sparing the account's rate limit during a long wait.
	poll := w.targetPoll()
	for {
		var pending, abandoned []string
		var changed <-chan struct{}
		for _, n := range names {
			ch, failed := board.watch(client.AccountID(), n)
			changed = ch
			if failed != nil {
				return fmt.Errorf("service binding target %s failed to be created in this run (%v); fix %s and run pulumi up again", n, failed, n)
			}
			_, found, err := client.GetScript(ctx, n)
			if err != nil {
				return err
			}
			if !found {
				pending = append(pending, n)
				if board.abandoned(client.AccountID(), n) {
					abandoned = append(abandoned, n)
				}
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if len(abandoned) > 0 {
			return fmt.Errorf("the target workers %s are this program's, and this up will not create them: another resource "+
				"of it failed; fix that and run pulumi up again", strings.Join(abandoned, ", "))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the target workers %s did not appear within %s; create them (or fix the service names) and run pulumi up again",
				strings.Join(pending, ", "), w.targetWait())
		}
		names = pending
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-time.After(poll):
			poll = min(2*poll, 10*w.targetPoll())
		}
	}
}

// reconcileConsumers makes the worker the consumer of exactly the wanted
// queues and returns the consumer IDs by queue ID.
func reconcileConsumers(ctx context.Context, client *cfapi.Client, args WorkerArgs, prior map[string]string) (map[string]string, error) {
	ids := map[string]string{}
	for _, c := range args.QueueConsumers {
		res, err := client.PutConsumer(ctx, c.QueueID, cfapi.Consumer{
			Script: args.Name, DeadLetterQueue: c.DeadLetterQueue,
			Settings: cfapi.ConsumerSettings{
				BatchSize: c.MaxBatchSize, MaxRetries: c.MaxRetries, MaxWaitTimeMs: c.MaxWaitTimeMs,
				MaxConcurrency: c.MaxConcurrency, RetryDelay: c.RetryDelaySeconds,
			},
		})
		if err != nil {
			return mergeIDs(prior, ids), err
		}
		ids[c.QueueID] = res.ID
	}
	for queueID, consumerID := range prior {
		if _, keep := ids[queueID]; keep {
			continue
		}
		if err := client.DeleteConsumer(ctx, queueID, consumerID); err != nil {
			return mergeIDs(prior, ids), err
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, nil
}

// mergeIDs keeps the consumers not yet reconciled, so a retry still knows them.
func mergeIDs(prior, done map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, prior)
	maps.Copy(out, done)
	return out
}

func argsFromSettings(name string, s cfapi.ScriptSettings) WorkerArgs {
	args := WorkerArgs{Name: name, CompatibilityDate: s.CompatibilityDate}
	for _, b := range s.Bindings {
		if readBinding(&args, b) {
			continue
		}
		switch b.Type {
		case "assets":
			args.Assets = assetsFromSettings(b)
		case "plain_text":
			if args.Vars == nil {
				args.Vars = map[string]string{}
			}
			if b.Text != nil {
				args.Vars[b.Name] = *b.Text
			}
		}
	}
	args.WorkerSettings = settingsFromScript(args.WorkerSettings, s)
	return args
}

// Delete removes the script's queue consumers, then the script.
func (*Worker) Delete(ctx context.Context, req infer.DeleteRequest[WorkerState]) (infer.DeleteResponse, error) {
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if err := removeRouting(ctx, client, req.State.WorkerRouting); err != nil {
		return infer.DeleteResponse{}, err
	}
	for queueID, consumerID := range req.State.ConsumerIDs {
		if err := client.DeleteConsumer(ctx, queueID, consumerID); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	return infer.DeleteResponse{}, client.DeleteScript(ctx, req.ID)
}
