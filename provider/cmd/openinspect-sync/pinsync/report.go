package pinsync

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Change is one line of the change report: a fact added, removed, changed or
// renamed within a section.
type Change struct {
	Section string // e.g. "workers", "worker control-plane vars"
	Kind    string // "added", "removed", "changed", "renamed"
	Name    string
	Old     string
	New     string
}

func (c Change) String() string {
	switch c.Kind {
	case "added":
		return fmt.Sprintf("  + %s: %s", c.Name, c.New)
	case "removed":
		return fmt.Sprintf("  - %s (was %s)", c.Name, c.Old)
	case "renamed":
		return fmt.Sprintf("  > %s renamed %s (%s)", c.Old, c.New, c.Name)
	}
	return fmt.Sprintf("  ~ %s: %s -> %s", c.Name, c.Old, c.New)
}

// Report is the change report of a pin move: every fact added, removed or
// changed between the current contract and the derived one, by section,
// and what the reviewer should know that the contract does not record.
type Report struct {
	From, To string
	Changes  []Change
	Notices  []string
}

// Sections in the order the report prints them.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "upstream %s -> %s\n", short(r.From), short(r.To))
	if len(r.Changes) == 0 {
		b.WriteString("no change to any fact the contract records\n")
	} else {
		count := map[string]int{}
		for _, c := range r.Changes {
			count[c.Kind]++
		}
		fmt.Fprintf(&b, "%d added, %d removed, %d changed, %d renamed\n", count["added"], count["removed"], count["changed"], count["renamed"])
	}
	section := ""
	for _, c := range r.Changes {
		if c.Section != section {
			section = c.Section
			fmt.Fprintf(&b, "%s:\n", section)
		}
		b.WriteString(c.String() + "\n")
	}
	if len(r.Notices) > 0 {
		b.WriteString("for the reviewer (not recorded in the contract):\n")
		for _, n := range r.Notices {
			b.WriteString("  ! " + n + "\n")
		}
	}
	return b.String()
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// Has reports whether a change of kind to name exists in a section whose
// name contains section.
func (r *Report) Has(section, kind, name string) bool {
	return slices.ContainsFunc(r.Changes, func(c Change) bool {
		return strings.Contains(c.Section, section) && c.Kind == kind && c.Name == name
	})
}

type differ struct{ changes []Change }

// diff compares two keyed sets of facts rendered as text.
func (d *differ) diff(section string, old, new map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(new)) {
		if o, ok := old[k]; !ok {
			d.changes = append(d.changes, Change{Section: section, Kind: "added", Name: k, New: new[k]})
		} else if o != new[k] {
			d.changes = append(d.changes, Change{Section: section, Kind: "changed", Name: k, Old: o, New: new[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, ok := new[k]; !ok {
			d.changes = append(d.changes, Change{Section: section, Kind: "removed", Name: k, Old: old[k]})
		}
	}
}

func keyed[T any](list []T, key func(T) string, value func(T) any) map[string]string {
	out := map[string]string{}
	for _, x := range list {
		if text, ok := value(x).(string); ok {
			out[key(x)] = text
		} else {
			out[key(x)] = jsonText(value(x))
		}
	}
	return out
}

func self[T any](x T) any { return x }

// bindingFacts are a worker's bindings keyed by kind and name, each valued by
// its target (and condition), so that a binding whose name changes while its
// target stays is reported as renamed.
func bindingFacts(w *upstream.Worker) map[string]string {
	out := map[string]string{}
	if w == nil {
		return out
	}
	add := func(kind, name, target, when string) {
		v := target
		if when != "" && when != "always" {
			v += " when " + when
		}
		out[kind+" "+name] = v
	}
	for _, x := range w.Bindings.All() {
		k, ok := reportedKinds[x.Kind]
		if !ok { // a kind added to the contract before its words here: named by its field
			k.kind, k.target = x.Kind, "target"
		}
		add(k.kind, x.Binding, k.target+" "+x.Target, x.When)
	}
	return out
}

// reportedKinds are how the report names each kind of binding (by its field
// in the contract) and what the kind binds.
var reportedKinds = map[string]struct{ kind, target string }{
	"d1": {"d1", "database"}, "kv": {"kv", "namespace"}, "r2": {"r2", "bucket"},
	"queueProducers": {"queue", "queue"}, "services": {"service", "worker"}, "durableObjects": {"durableObject", "class"},
}

// renames folds a removed and an added binding of the same kind and target
// into one rename, printed where the addition was.
func renames(changes []Change) []Change {
	renamed := map[int]Change{} // by the addition's index
	folded := map[int]bool{}    // the removals folded into a rename
	for i, rem := range changes {
		if rem.Kind != "removed" {
			continue
		}
		kind, _, _ := strings.Cut(rem.Name, " ")
		for j, add := range changes {
			addKind, _, _ := strings.Cut(add.Name, " ")
			if _, taken := renamed[j]; taken || add.Kind != "added" || addKind != kind || add.New != rem.Old {
				continue
			}
			renamed[j] = Change{Section: rem.Section, Kind: "renamed", Name: add.New, Old: rem.Name, New: strings.TrimPrefix(add.Name, kind+" ")}
			folded[i] = true
			break
		}
	}
	var out []Change
	for i, c := range changes {
		if r, ok := renamed[i]; ok {
			out = append(out, r)
		} else if !folded[i] {
			out = append(out, c)
		}
	}
	return out
}

// buildReport compares the contract the pin moves from with the derived one.
func buildReport(old, new *upstream.Contract, d *deriver) *Report {
	df := &differ{}
	workerKey := func(w upstream.Worker) string { return w.Logical }
	df.diff("workers", keyed(old.Workers, workerKey, func(w upstream.Worker) any { return "when " + w.When + ", " + w.Package }),
		keyed(new.Workers, workerKey, func(w upstream.Worker) any { return "when " + w.When + ", " + w.Package }))
	names := map[string]bool{}
	for _, w := range slices.Concat(old.Workers, new.Workers) {
		names[w.Logical] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		ow, nw := old.Worker(name), new.Worker(name)
		if ow == nil || nw == nil {
			// A whole worker added or removed: list what it carries as added
			// or removed too, so the report names every binding and secret.
			if ow == nil {
				ow = &upstream.Worker{}
			}
			if nw == nil {
				nw = &upstream.Worker{}
			}
		}
		prefix := "worker " + name + " "
		bindings := &differ{}
		bindings.diff(prefix+"bindings", bindingFacts(ow), bindingFacts(nw))
		df.changes = append(df.changes, renames(bindings.changes)...)
		entryKey := func(e upstream.EnvEntry) string { return e.Name }
		entryValue := func(e upstream.EnvEntry) any { return jsonText(e.Source) + " when " + e.When }
		df.diff(prefix+"vars", keyed(ow.Vars, entryKey, entryValue), keyed(nw.Vars, entryKey, entryValue))
		df.diff(prefix+"secrets", keyed(ow.Secrets, entryKey, entryValue), keyed(nw.Secrets, entryKey, entryValue))
		cronKey := func(c upstream.Cron) string { return c.Schedule }
		cronValue := func(c upstream.Cron) any { return c.Purpose }
		df.diff(prefix+"crons", keyed(ow.Crons, cronKey, cronValue), keyed(nw.Crons, cronKey, cronValue))
		doKey := func(c upstream.DurableObjectClass) string { return c.ClassName }
		df.diff(prefix+"Durable Object classes", keyed(ow.DurableObjectClasses, doKey, func(c upstream.DurableObjectClass) any { return c.Storage }),
			keyed(nw.DurableObjectClasses, doKey, func(c upstream.DurableObjectClass) any { return c.Storage }))
		qcKey := func(c upstream.QueueConsumer) string { return c.Queue }
		df.diff(prefix+"queue consumers", keyed(ow.QueueConsumers, qcKey, self[upstream.QueueConsumer]), keyed(nw.QueueConsumers, qcKey, self[upstream.QueueConsumer]))
	}
	df.diff("queues", keyed(old.Queues, func(q upstream.Queue) string { return q.Logical }, self[upstream.Queue]),
		keyed(new.Queues, func(q upstream.Queue) string { return q.Logical }, self[upstream.Queue]))
	df.diff("KV namespaces", keyed(old.KVNamespaces, func(x upstream.KVNamespace) string { return x.Logical }, self[upstream.KVNamespace]),
		keyed(new.KVNamespaces, func(x upstream.KVNamespace) string { return x.Logical }, self[upstream.KVNamespace]))
	df.diff("R2 buckets", keyed(old.R2Buckets, func(x upstream.R2Bucket) string { return x.Logical }, self[upstream.R2Bucket]),
		keyed(new.R2Buckets, func(x upstream.R2Bucket) string { return x.Logical }, self[upstream.R2Bucket]))
	df.diff("D1 databases", keyed(old.D1Databases, func(x upstream.D1Database) string { return x.Logical }, self[upstream.D1Database]),
		keyed(new.D1Databases, func(x upstream.D1Database) string { return x.Logical }, self[upstream.D1Database]))
	inputKey := func(in upstream.Input) string { return in.UpstreamVariable + " (" + in.Name + ")" }
	inputValue := func(in upstream.Input) any {
		return fmt.Sprintf("%s, default %s, required %t, secret %t", in.Type, jsonText(in.Default), in.Required, in.Secret)
	}
	df.diff("inputs (upstream variables)", keyed(old.Inputs, inputKey, inputValue), keyed(new.Inputs, inputKey, inputValue))
	genKey := func(g upstream.Generated) string { return g.UpstreamResource + " (" + g.Name + ")" }
	genValue := func(g upstream.Generated) any { return fmt.Sprintf("%d %s", g.Length, g.Alphabet) }
	df.diff("generated secrets", keyed(old.Generated, genKey, genValue), keyed(new.Generated, genKey, genValue))
	condValue := func(c upstream.Condition) string { return jsonText(c.Test) }
	df.diff("conditions", mapValues(old.Conditions, condValue), mapValues(new.Conditions, condValue))
	df.diff("compatibility", map[string]string{"settings": jsonText(old.Compatibility)}, map[string]string{"settings": jsonText(new.Compatibility)})
	df.diff("migrations", old.Artefacts.Migrations, new.Artefacts.Migrations)
	df.diff("migration files' features", migrationFeatures(old), migrationFeatures(new))
	df.diff("toolchain pins", pinFacts(old), pinFacts(new))

	r := &Report{From: old.Upstream.Commit, To: new.Upstream.Commit, Changes: df.changes}
	for _, w := range slices.Sorted(maps.Keys(d.deletedClasses)) {
		if classes := d.deletedClasses[w]; len(classes) > 0 {
			r.Notices = append(r.Notices, fmt.Sprintf("worker %s: upstream deletes Durable Object class(es) %s with deleted_classes; the provider emits that step itself when a class leaves the contract", w, strings.Join(classes, ", ")))
		}
	}
	var removed []string
	for _, c := range df.changes {
		switch {
		case c.Section != "migrations":
		case c.Kind == "changed":
			r.Notices = append(r.Notices, fmt.Sprintf("migration %s was edited after it was recorded: an installation that applied it keeps the old version (the applier skips recorded files by number)", c.Name))
		case c.Kind == "removed":
			removed = append(removed, c.Name)
		}
	}
	if len(removed) > 0 {
		r.Notices = append(r.Notices, fmt.Sprintf("%d migration file(s) are gone at %s (%s .. %s): an installation that applied them keeps their effect; nothing reverts a migration",
			len(removed), short(new.Upstream.Commit), removed[0], removed[len(removed)-1]))
	}
	if old.Upstream.Commit != new.Upstream.Commit && len(new.Artefacts.Bundles) > 0 {
		r.Notices = append(r.Notices, "artefacts.bundles and artefacts.web are kept as recorded at "+short(old.Upstream.Commit)+
			" (their digests need a build): run the release step with -record before releasing; until then it refuses this pin's build")
	}
	r.Notices = append(r.Notices, d.notices...)
	return r
}

func mapValues[V any](m map[string]V, value func(V) string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = value(v)
	}
	return out
}

func migrationFeatures(c *upstream.Contract) map[string]string {
	out := map[string]string{}
	for _, f := range c.D1Migrations.FilesWithTriggers {
		out[f] = "creates a trigger"
	}
	for _, f := range c.D1Migrations.FilesWithPragmas {
		out[f] = strings.TrimPrefix(out[f]+", runs a pragma", ", ")
	}
	return out
}

func pinFacts(c *upstream.Contract) map[string]string {
	m, dt := c.Sandbox.Modal, c.Sandbox.Daytona
	return map[string]string{
		"modal opencode-ai":         m.Image.OpencodeAI,
		"modal @opencode-ai/plugin": m.Image.OpencodePlugin,
		"modal code-server":         m.Image.CodeServer,
		"modal agent-browser":       m.Image.AgentBrowser,
		"modal ttyd":                m.Image.Ttyd,
		"modal client":              m.ModalClientVersion,
		"sandbox runtime":           m.Image.RuntimeVersion,
		"daytona opencode-ai":       dt.Toolchain.OpencodeAI,
		"daytona code-server":       dt.Toolchain.CodeServer,
		"daytona agent-browser":     dt.Toolchain.AgentBrowser,
		"daytona snapshot version":  dt.Snapshot.SandboxVersion,
		"daytona builder sdk":       dt.Snapshot.BuilderSDK.Version,
	}
}
