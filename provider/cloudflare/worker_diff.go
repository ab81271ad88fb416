package cloudflare

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
)

// workerChanges collects a worker's detailed diff and, for the preview's
// message, what each change means: whether it needs a new upload and why.
type workerChanges struct {
	detailed map[string]p.PropertyDiff
	// content, settings and secrets name the changes that need an upload;
	// other names those applied without one (crons, workers.dev, consumers).
	content, settings, secrets, other []string
}

func (c *workerChanges) add(key string, kind p.DiffKind, reason *[]string, what string) {
	if _, both := c.detailed[key]; both {
		kind = p.Update // a list element removed where another was added
	}
	c.detailed[key] = p.PropertyDiff{Kind: kind, InputDiff: true}
	*reason = append(*reason, what)
}

// scalar records a change of a whole field.
func (c *workerChanges) scalar(key string, changed bool, reason *[]string) {
	if changed {
		c.add(key, p.Update, reason, key)
	}
}

// byName records each entry of a map input that was added, changed or
// removed, under its own key. A secret is compared by value and named only.
func (c *workerChanges) byName(field string, olds, news map[string]string, reason *[]string) {
	for _, name := range slices.Sorted(maps.Keys(news)) {
		old, had := olds[name]
		switch {
		case !had:
			c.add(fmt.Sprintf("%s[%q]", field, name), p.Add, reason, fmt.Sprintf("%s %s added", field, name))
		case old != news[name]:
			c.add(fmt.Sprintf("%s[%q]", field, name), p.Update, reason, fmt.Sprintf("%s %s changed", field, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(olds)) {
		if _, kept := news[name]; !kept {
			c.add(fmt.Sprintf("%s[%q]", field, name), p.Delete, reason, fmt.Sprintf("%s %s removed", field, name))
		}
	}
}

// byKey records each element of a list input, matched by its key (a
// binding's name, a consumer's queue) rather than its position, so a
// reordered list is no change. The detailed-diff key is the element's index
// in the new list (the old one for a removal), which the engine resolves
// against the inputs.
func byKey[T any](c *workerChanges, field string, olds, news []T, key func(T) string, reason *[]string) {
	oldIndex := map[string]int{}
	for i, o := range olds {
		oldIndex[key(o)] = i
	}
	seen := map[string]bool{}
	for i, n := range news {
		k := key(n)
		seen[k] = true
		j, had := oldIndex[k]
		switch {
		case !had:
			c.add(fmt.Sprintf("%s[%d]", field, i), p.Add, reason, fmt.Sprintf("%s %s added", field, k))
		case !reflect.DeepEqual(normalizeEmpty(reflect.ValueOf(olds[j])), normalizeEmpty(reflect.ValueOf(n))):
			c.add(fmt.Sprintf("%s[%d]", field, i), p.Update, reason, fmt.Sprintf("%s %s changed", field, k))
		}
	}
	for i, o := range olds {
		if k := key(o); !seen[k] {
			c.add(fmt.Sprintf("%s[%d]", field, i), p.Delete, reason, fmt.Sprintf("%s %s removed", field, k))
		}
	}
}

func differ(a, b any) bool {
	return !reflect.DeepEqual(normalizeEmpty(reflect.ValueOf(a)), normalizeEmpty(reflect.ValueOf(b)))
}

// Diff names each input that moved, from state alone (no remote call):
// each var, secret (by name, never its value), binding (by binding name),
// cron, compatibility setting and module. Whether an update uploads a new
// version is the content and secrets hashes' call, as in Update; the log
// line says whether it does and why. The detailed diff names only inputs:
// hash and secretsHash are outputs, which the engine renders from the old
// state alone before the update runs, so they would read as removals.
func (*Worker) Diff(ctx context.Context, req infer.DiffRequest[WorkerArgs, WorkerState]) (infer.DiffResponse, error) {
	olds, news := req.State.WorkerArgs, req.Inputs
	log := p.GetLogger(ctx)
	if olds.Name != news.Name {
		log.Infof("replace because name changes (%s -> %s): the script name is the worker's identity; "+
			"a new script is uploaded and the old one deleted", olds.Name, news.Name)
		return infer.DiffResponse{HasChanges: true, DetailedDiff: map[string]p.PropertyDiff{
			"name": {Kind: p.UpdateReplace, InputDiff: true},
		}}, nil
	}
	detailed, message, err := workerDiff(req.State, news)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	if message != "" {
		log.Info(message)
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// workerDiff is the detailed diff of an update that keeps the script name,
// and the preview's message: whether a new version is uploaded, and why.
func workerDiff(state WorkerState, news WorkerArgs) (map[string]p.PropertyDiff, string, error) {
	olds := state.WorkerArgs
	c := &workerChanges{detailed: map[string]p.PropertyDiff{}}
	c.scalar("content", olds.Content != news.Content, &c.content)
	c.scalar("script", differ(olds.Script, news.Script), &c.content)
	c.scalar("mainModule", olds.mainModule() != news.mainModule(), &c.content)
	c.byName("modules", olds.Modules, news.Modules, &c.content)
	c.scalar("compatibilityDate", olds.CompatibilityDate != news.CompatibilityDate, &c.settings)
	c.scalar("compatibilityFlags", differ(olds.CompatibilityFlags, news.CompatibilityFlags), &c.settings)
	// The owner is uploaded as a script tag; takeOverFrom matters only to a create.
	c.scalar("owner", olds.Owner != news.Owner, &c.settings)
	for _, k := range workerBindingKinds {
		k.diff(c, olds, news)
	}
	c.byName("vars", olds.Vars, news.Vars, &c.settings)
	c.byName("secrets", olds.Secrets, news.Secrets, &c.secrets)
	byKey(c, "crons", olds.Crons, news.Crons, func(s string) string { return s }, &c.other)
	c.scalar("workersDev", (olds.WorkersDev == nil || *olds.WorkersDev) != (news.WorkersDev == nil || *news.WorkersDev), &c.other)
	byKey(c, "queueConsumers", olds.QueueConsumers, news.QueueConsumers, func(q QueueConsumer) string { return q.QueueID }, &c.other)
	c.scalar("adoptExisting", olds.AdoptExisting != news.AdoptExisting, &c.other)
	if err := c.assets(state, news); err != nil {
		return nil, "", err
	}
	settingsDiff(c, olds, news)

	hash, secretsHash, err := news.hashes()
	if err != nil {
		return nil, "", err
	}
	var why []string
	if hash != state.Hash {
		switch {
		case len(c.content)+len(c.settings) > 0:
			why = append(why, reasons("content", c.content), reasons("settings", c.settings))
		case state.Hash == "":
			// No input moved, yet the upload happens: the entry names the
			// input that is sent again, so the update is not unexplained.
			c.detailed[news.contentKey()] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			why = append(why, "an unfinished last upload")
		default:
			c.detailed[news.contentKey()] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			recorded := "hash " + short(state.Hash)
			if strings.HasPrefix(state.Hash, "changed outside") { // set by Read: a sentence, never cut
				recorded = state.Hash
			}
			why = append(why, "content or settings that differ from the last upload recorded ("+recorded+")")
		}
	}
	if secretsHash != state.SecretsHash {
		if len(c.secrets) == 0 {
			c.detailed["secrets"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			why = append(why, "secret values that differ from the last upload recorded")
		} else {
			why = append(why, reasons("secrets", c.secrets))
		}
	}
	why = slices.DeleteFunc(why, func(s string) bool { return s == "" })
	switch {
	case len(why) > 0:
		return c.detailed, fmt.Sprintf("worker %s: a new version is uploaded because of %s%s%s", news.Name, strings.Join(why, "; "),
			migrationNote(state, news), without(c.other)), nil
	case len(c.other) > 0:
		return c.detailed, fmt.Sprintf("worker %s: no upload; only %s change", news.Name, strings.Join(c.other, ", ")), nil
	}
	return c.detailed, "", nil
}

// contentKey is the input that carries the script's code.
func (a WorkerArgs) contentKey() string {
	switch {
	case a.Script != nil:
		return "script"
	case len(a.Modules) > 0:
		return "modules"
	}
	return "content"
}

// migrationNote says which Durable Object migration the upload carries, as
// Update plans it from the recorded classes: a class deleted with
// deleted_classes takes every object of it and its storage along, which a
// preview must say in words, not only as a binding removed.
func migrationNote(state WorkerState, news WorkerArgs) string {
	m := planMigration(state.MigrationTag, state.DurableObjectClasses, news.ownClasses())
	if m == nil {
		return ""
	}
	var steps []string
	if len(m.NewSqliteClasses) > 0 {
		steps = append(steps, "new_sqlite_classes "+strings.Join(m.NewSqliteClasses, ", "))
	}
	if len(m.DeletedClasses) > 0 {
		steps = append(steps, "deleted_classes "+strings.Join(m.DeletedClasses, ", ")+
			" (every object of the class is deleted with its storage)")
	}
	return fmt.Sprintf("; with the Durable Object migration %s -> %s: %s", m.OldTag, m.NewTag, strings.Join(steps, "; "))
}

func reasons(kind string, what []string) string {
	if len(what) == 0 {
		return ""
	}
	return kind + " (" + strings.Join(what, ", ") + ")"
}

func without(other []string) string {
	if len(other) == 0 {
		return ""
	}
	return "; applied without the upload: " + strings.Join(other, ", ")
}
