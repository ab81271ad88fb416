package cloudflare

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// Read notices a script changed or deleted outside Pulumi, and serves
// `pulumi import` by script name. Every read addresses the script by name,
// so its cost does not grow with the account: the script (etag), its
// settings (bindings, compatibility, tags, observability, placement,
// limits, logpush, tail consumers), its cron triggers and its workers.dev
// switch, one request each; then one per consumed queue, one for its
// custom domains and one per zone with a route. Whatever moved is written
// into the state, so the next diff names it and the next up restores it.
func (*Worker) Read(ctx context.Context, req infer.ReadRequest[WorkerArgs, WorkerState]) (infer.ReadResponse[WorkerArgs, WorkerState], error) {
	fail := func(err error) (infer.ReadResponse[WorkerArgs, WorkerState], error) {
		return infer.ReadResponse[WorkerArgs, WorkerState]{}, err
	}
	client, err := accountClient(ctx, req.State.AccountID)
	if err != nil {
		return fail(err)
	}
	script, found, err := client.GetScript(ctx, req.ID)
	if err != nil {
		return fail(err)
	}
	if !found {
		return infer.ReadResponse[WorkerArgs, WorkerState]{}, nil
	}
	settings, err := client.GetScriptSettings(ctx, req.ID)
	if err != nil {
		return fail(err)
	}
	inputs, state := req.Inputs, req.State
	importing := state.Name == ""
	var moved []string
	if importing {
		// Code and secret values cannot be read back; the program supplies them.
		state.WorkerArgs = argsFromSettings(req.ID, settings)
		state.MigrationTag = settings.MigrationTag
		state.DurableObjectClasses = state.ownClasses()
		state.Adopted = true
	} else {
		moved = settingsDrift(&state, settings)
	}
	if state.Etag != "" && script.Etag != state.Etag {
		moved = append(moved, "code (etag "+script.Etag+")")
	}
	if len(moved) > 0 && !importing {
		// The next up uploads again, restoring what the program says.
		state.Hash = "changed outside Pulumi: " + strings.Join(moved, ", ")
	}
	state.Etag = script.Etag
	state.AccountID = client.AccountID()
	if err := readTriggers(ctx, client, &state); err != nil {
		return fail(err)
	}
	if state.Domains, state.Routes, state.WorkerRouting, err = readRouting(ctx, client, state); err != nil {
		return fail(err)
	}
	if state.WorkersDev == nil || *state.WorkersDev {
		// The URL follows the account subdomain (or the configured base).
		if state.URL, err = config.FromContext(ctx).WorkerURL(ctx, client, req.ID); err != nil {
			return fail(err)
		}
	} else {
		state.URL = ""
	}
	if importing {
		inputs = state.WorkerArgs
	}
	return infer.ReadResponse[WorkerArgs, WorkerState]{ID: req.ID, Inputs: inputs, State: state}, nil
}

// readTriggers reads the cron triggers, the workers.dev switch and the
// queue consumers into the state; deploy re-applies whatever differs.
func readTriggers(ctx context.Context, client *cfapi.Client, state *WorkerState) error {
	crons, err := client.GetSchedules(ctx, state.Name)
	if err != nil {
		return err
	}
	if !sameSet(crons, state.Crons) {
		state.Crons = crons
	}
	dev, err := client.GetWorkersDev(ctx, state.Name)
	if err != nil {
		return err
	}
	if dev != (state.WorkersDev == nil || *state.WorkersDev) {
		state.WorkersDev = new(dev)
	}
	var consumers []QueueConsumer
	ids := map[string]string{}
	for _, c := range state.QueueConsumers {
		listed, err := client.ListConsumers(ctx, c.QueueID)
		if cfapi.IsNotFound(err) {
			continue // the queue is gone, and the consumer with it
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(listed, func(x cfapi.Consumer) bool { return x.Script == state.Name })
		if i < 0 {
			continue // removed outside Pulumi: the next up adds it again
		}
		consumers = append(consumers, consumerAsRead(c, listed[i]))
		ids[c.QueueID] = listed[i].ID
	}
	if len(state.QueueConsumers) > 0 {
		state.QueueConsumers = consumers
		state.ConsumerIDs = ids
		if len(ids) == 0 {
			state.ConsumerIDs = nil
		}
	}
	return nil
}

// consumerAsRead is the recorded consumer with each setting it states
// replaced by the remote value (a setting left to the API's default stays
// unset, so the default is no drift).
func consumerAsRead(recorded QueueConsumer, remote cfapi.Consumer) QueueConsumer {
	out := recorded
	out.DeadLetterQueue = remote.DeadLetterQueue
	take := func(mine **int, theirs *int) {
		if *mine != nil {
			*mine = theirs
		}
	}
	take(&out.MaxBatchSize, remote.Settings.BatchSize)
	take(&out.MaxWaitTimeMs, remote.Settings.MaxWaitTimeMs)
	take(&out.MaxConcurrency, remote.Settings.MaxConcurrency)
	take(&out.MaxRetries, remote.Settings.MaxRetries)
	take(&out.RetryDelaySeconds, remote.Settings.RetryDelay)
	return out
}

func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// settingsDrift writes the script's remote settings that differ from the
// state into the state and names them.
func settingsDrift(state *WorkerState, remote cfapi.ScriptSettings) []string {
	var moved []string
	if remote.CompatibilityDate != "" && remote.CompatibilityDate != state.CompatibilityDate {
		state.CompatibilityDate = remote.CompatibilityDate
		moved = append(moved, "compatibility date")
	}
	if !sameSet(remote.CompatibilityFlags, state.CompatibilityFlags) {
		state.CompatibilityFlags = remote.CompatibilityFlags
		moved = append(moved, "compatibility flags")
	}
	var userTags []string
	for _, t := range remote.Tags {
		if !strings.HasPrefix(t, ownerTagPrefix) {
			userTags = append(userTags, t)
		}
	}
	if !sameSet(userTags, state.Tags) {
		state.Tags = userTags
		moved = append(moved, "tags")
	}
	if state.Owner != "" && ownerFromTags(remote.Tags) != state.Owner {
		moved = append(moved, "ownership tag")
	}
	want, got := state.scriptConfig(), remote.Config
	if !reflect.DeepEqual(normalObservability(want.Observability), normalObservability(got.Observability)) {
		state.Observability = observabilityInput(got.Observability)
		moved = append(moved, "observability")
	}
	if !reflect.DeepEqual(want.Placement, got.Placement) {
		state.Placement = nil
		if pl := got.Placement; pl != nil {
			state.Placement = &Placement{Mode: pl.Mode, Region: pl.Region, Host: pl.Host, Hostname: pl.Hostname}
		}
		moved = append(moved, "placement")
	}
	if !reflect.DeepEqual(want.Limits, got.Limits) {
		state.Limits = nil
		if got.Limits != nil {
			state.Limits = &ScriptLimits{CPUMs: got.Limits.CPUMs}
		}
		moved = append(moved, "limits")
	}
	if want.Logpush != got.Logpush {
		state.Logpush = new(got.Logpush)
		moved = append(moved, "logpush")
	}
	if differ(want.TailConsumers, got.TailConsumers) {
		state.TailConsumers = nil
		for _, t := range got.TailConsumers {
			state.TailConsumers = append(state.TailConsumers, TailConsumer{Service: t.Service, Environment: t.Environment, Namespace: t.Namespace})
		}
		moved = append(moved, "tail consumers")
	}
	if changed := bindingsDrift(state.WorkerArgs, remote.Bindings); len(changed) > 0 {
		moved = append(moved, "bindings "+strings.Join(changed, ", "))
	}
	return moved
}

// normalObservability is o with Cloudflare's defaults filled in: absent is
// off, an absent sampling rate is 1, and nothing but "off" matters of a
// disabled setting.
func normalObservability(o *cfapi.Observability) cfapi.Observability {
	one := 1.0
	if o == nil || !o.Enabled {
		return cfapi.Observability{}
	}
	out := cfapi.Observability{Enabled: true, HeadSamplingRate: o.HeadSamplingRate}
	if out.HeadSamplingRate == nil {
		out.HeadSamplingRate = &one
	}
	if o.Logs != nil && o.Logs.Enabled {
		logs := *o.Logs
		if logs.HeadSamplingRate == nil {
			logs.HeadSamplingRate = &one
		}
		out.Logs = &logs
	}
	return out
}

func observabilityInput(o *cfapi.Observability) *Observability {
	if o == nil {
		return nil
	}
	out := &Observability{Enabled: o.Enabled, HeadSamplingRate: o.HeadSamplingRate}
	if o.Logs != nil {
		out.Logs = &ObservabilityLogs{Enabled: o.Logs.Enabled, InvocationLogs: new(o.Logs.InvocationLogs), HeadSamplingRate: o.Logs.HeadSamplingRate}
	}
	return out
}

// bindingsDrift names the declared bindings the script no longer has as
// declared, and the bindings it has that nobody declared. A declared
// binding matches when every field it sends has the same value remotely
// (the API may add fields of its own); a secret's value is never read.
// Bindings of a keepBindings type, and the assets binding, are not the
// program's to declare.
func bindingsDrift(args WorkerArgs, remote []cfapi.Binding) []string {
	fields := func(b cfapi.Binding) map[string]any {
		raw, _ := json.Marshal(b)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if b.Type == "secret_text" {
			delete(m, "text")
		}
		return m
	}
	have := map[string]map[string]any{}
	for _, b := range remote {
		have[b.Name] = fields(b)
	}
	var changed []string
	declared := map[string]bool{}
	for _, d := range args.declaredBindings() {
		declared[d.binding.Name] = true
		got, ok := have[d.binding.Name]
		if !ok {
			changed = append(changed, d.binding.Name+" removed")
			continue
		}
		for k, v := range fields(d.binding) {
			if !reflect.DeepEqual(got[k], v) {
				changed = append(changed, d.binding.Name+" changed")
				break
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		kind, _ := have[name]["type"].(string)
		if !declared[name] && kind != "assets" && !slices.Contains(args.KeepBindings, kind) {
			changed = append(changed, name+" added")
		}
	}
	return changed
}
