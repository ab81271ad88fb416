package pinsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// deriver builds the contract of one upstream tree. The contract's own
// sections (naming, derived values, the sandbox backends' protocol facts,
// the migration ledger, the artefacts' build recipe) and the words for
// facts that already exist (descriptions, purposes, notes) come from the
// current contract; every fact the tree states is read from it.
type deriver struct {
	tree      *tree
	env       *tfDir
	current   *currentContract
	decisions *Decisions
	out       *upstream.Contract

	generated      []upstream.Generated
	usedConditions map[string]bool
	undecidedFacts []Undecided
	problems       []string
	// deletedClasses are Durable Object classes a worker's deleted_classes
	// names at this commit, by worker: reported, not recorded (the provider
	// emits the deleted_classes step itself when a class leaves the contract).
	deletedClasses map[string][]string
	// notices are facts for the reviewer that the contract does not hold.
	notices []string

	// workerModuleDir is terraform/modules/cloudflare-worker, parsed;
	// mainModule is the module name it uploads a bundle under.
	workerModuleDir *tfDir
	mainModule      string
	compat          *upstream.Compatibility
	compatFrom      string
	// localKey is the outermost local whose body source() is translating:
	// the expressions key to suggest when the body cannot be translated.
	localKey string
}

func (d *deriver) fail(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// currentContract is the contract the pin moves from, with lookups.
type currentContract struct{ *upstream.Contract }

func (c *currentContract) generatedByResource(resource string) *upstream.Generated {
	for i := range c.Generated {
		if c.Generated[i].UpstreamResource == resource {
			return &c.Generated[i]
		}
	}
	return nil
}

func clone(c *upstream.Contract) *upstream.Contract {
	raw, err := json.Marshal(c)
	if err != nil {
		panic(err) // a decoded contract always marshals
	}
	out, err := upstream.Parse(raw)
	if err != nil {
		panic(err)
	}
	return out
}

// derive reads the tree into a new contract.
func derive(t *tree, current *upstream.Contract, decisions *Decisions) (*upstream.Contract, *deriver, error) {
	env, err := parseDir(t.path(productionDir))
	if err != nil {
		return nil, nil, err
	}
	d := &deriver{
		tree: t, env: env, current: &currentContract{current}, decisions: decisions,
		out: clone(current), usedConditions: map[string]bool{}, deletedClasses: map[string][]string{},
	}
	d.out.Upstream.Commit, d.out.Upstream.CommitDate = t.commit, t.commitDate
	if err := d.readWorkerModule(); err != nil {
		return nil, nil, err
	}
	for name, c := range decisions.Conditions {
		if _, exists := d.out.Conditions[name]; exists {
			continue // decided earlier and already recorded: the contract's words stand
		}
		d.out.Conditions[name] = upstream.Condition{Description: c.Description, Test: c.Test}
	}
	d.inputs()
	d.out.D1Databases = d.d1Databases()
	d.out.KVNamespaces = d.kvNamespaces()
	d.out.R2Buckets = d.r2Buckets()
	consumers := d.queueConsumers()
	d.out.Queues = d.queues(consumers)
	d.out.Workers = d.workers(consumers)
	d.compatibility()
	d.out.Generated = keepOrder(d.generated, current.Generated, func(g upstream.Generated) string { return g.UpstreamResource })
	d.conditionDefaultsAndPrune()
	d.sandboxPins()
	d.migrations()
	d.bundles()
	if len(d.problems) > 0 {
		return nil, d, fmt.Errorf("reading upstream at %s:\n  %s", t.commit, strings.Join(d.problems, "\n  "))
	}
	if len(d.undecidedFacts) > 0 {
		return nil, d, &UndecidedError{Facts: d.undecidedFacts}
	}
	if err := d.out.ValidateFor(t.commit); err != nil {
		return nil, d, fmt.Errorf("the derived contract is inconsistent: %w", err)
	}
	return d.out, d, nil
}

// readWorkerModule parses the module the workers are deployed with (the
// source of the first module call that passes worker_name and script_path).
func (d *deriver) readWorkerModule() error {
	for _, b := range d.env.each("module", "") {
		if !moduleSource(b, "cloudflare-worker") {
			continue
		}
		src, _ := literalString(attr(b, "source"))
		dir := filepath.Join(d.env.dir, filepath.FromSlash(src))
		m, err := parseDir(dir)
		if err != nil {
			return fmt.Errorf("the worker module %s: %w", src, err)
		}
		d.workerModuleDir = m
		version := m.resource("cloudflare_worker_version", "this")
		if version == nil {
			return fmt.Errorf("the worker module %s has no cloudflare_worker_version.this", src)
		}
		main, ok := literalString(attr(version, "main_module"))
		if !ok {
			return fmt.Errorf("the worker module %s: cloudflare_worker_version.this main_module is not a string", src)
		}
		d.mainModule = main
		return nil
	}
	return fmt.Errorf("%w: %s calls no cloudflare-worker module", ErrNotUpstream, productionDir)
}

// inputs keeps every input whose upstream variable still exists, with its
// type, default and secrecy as upstream now declares them, and adds the
// decided new ones.
func (d *deriver) inputs() {
	var out []upstream.Input
	for _, in := range d.out.Inputs {
		v := d.env.variables[in.UpstreamVariable]
		if v == nil {
			continue // gone upstream: the report names it
		}
		d.applyVariable(&in, v)
		out = append(out, in)
	}
	names := make([]string, 0, len(d.decisions.Inputs))
	for name := range d.decisions.Inputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.ContainsFunc(out, func(in upstream.Input) bool { return in.UpstreamVariable == name }) {
			continue
		}
		v := d.env.variables[name]
		if v == nil {
			d.fail("decisions: inputs.%s: %s declares no such variable", name, productionDir)
			continue
		}
		dec := d.decisions.Inputs[name]
		in := upstream.Input{Name: dec.Name, UpstreamVariable: name, Description: dec.Description}
		d.applyVariable(&in, v)
		out = append(out, in)
	}
	d.out.Inputs = out
}

func (d *deriver) applyVariable(in *upstream.Input, v *hclsyntax.Block) {
	typ, def, sensitive := variableFacts(v)
	switch typ {
	case "string", "bool", "number":
	default:
		d.fail("variable %s: type %s is not string, bool or number, which inputs are", in.UpstreamVariable, typ)
	}
	in.Type, in.Default, in.Required = typ, def, def == nil
	// The contract may keep a value secret that upstream does not mark
	// sensitive (never the other way round).
	in.Secret = in.Secret || sensitive
}

// logical reads a resource name template "<prefix>-<logical>-${local.name_suffix}".
func (d *deriver) logical(e hclsyntax.Expression, usedBy string) (string, bool) {
	parts, ok := templateParts(e)
	prefix := d.out.Naming.DefaultPrefix + "-"
	if ok && len(parts) == 2 && parts[1] == "${local.name_suffix}" && strings.HasPrefix(parts[0], prefix) && strings.HasSuffix(parts[0], "-") {
		if name := strings.TrimSuffix(strings.TrimPrefix(parts[0], prefix), "-"); name != "" {
			return name, true
		}
	}
	d.fail("%s: name %q is not \"%s<logical>-${local.name_suffix}\"", usedBy, d.env.text(e), prefix)
	return "", false
}

func (d *deriver) d1Databases() []upstream.D1Database {
	var out []upstream.D1Database
	for _, b := range d.env.each("resource", "cloudflare_d1_database") {
		db := upstream.D1Database{Logical: b.Labels[1]}
		db.When, _ = d.countWhen(b, "cloudflare_d1_database."+db.Logical)
		if cur := find(d.current.D1Databases, func(x upstream.D1Database) bool { return x.Logical == db.Logical }); cur != nil {
			db.Notes = cur.Notes
		}
		out = append(out, db)
	}
	return out
}

// moduleSource is true when a module block calls the module named base
// (terraform/modules/<base>).
func moduleSource(b *hclsyntax.Block, base string) bool {
	src, ok := literalString(attr(b, "source"))
	return ok && path.Base(src) == base
}

func (d *deriver) kvNamespaces() []upstream.KVNamespace {
	var out []upstream.KVNamespace
	for _, b := range d.env.each("module", "") {
		if !moduleSource(b, "cloudflare-kv") {
			continue
		}
		usedBy := "module." + b.Labels[0]
		logical, ok := d.logical(attr(b, "namespace_name"), usedBy)
		if !ok {
			continue
		}
		kv := upstream.KVNamespace{Logical: logical}
		kv.When, _ = d.countWhen(b, usedBy)
		out = append(out, kv)
	}
	return out
}

func (d *deriver) r2Buckets() []upstream.R2Bucket {
	var out []upstream.R2Bucket
	for _, b := range d.env.each("resource", "cloudflare_r2_bucket") {
		usedBy := "cloudflare_r2_bucket." + b.Labels[1]
		bucket := upstream.R2Bucket{}
		name := unwrap(attr(b, "name"))
		// var.x != "" ? var.x : "<template>": an override input, else the pattern.
		if c, ok := name.(*hclsyntax.ConditionalExpr); ok {
			s, ok := d.source(c.TrueResult, usedBy)
			if ok && s.Input != "" {
				bucket.NameOverride = &upstream.Source{Input: s.Input}
			}
			name = c.FalseResult
		}
		logical, ok := d.logical(name, usedBy)
		if !ok {
			continue
		}
		bucket.Logical = logical
		bucket.When, _ = d.countWhen(b, usedBy)
		if loc := attr(b, "location"); loc != nil {
			if s, ok := d.source(loc, usedBy+".location"); ok {
				bucket.LocationHint = &s
			}
		}
		out = append(out, bucket)
	}
	return out
}

// queueName is the logical name of the queue a cloudflare_queue reference
// (cloudflare_queue.x[0].queue_name or .queue_id) names.
func (d *deriver) queueName(e hclsyntax.Expression, usedBy string) (string, bool) {
	ref, ok := reference(e)
	if !ok || !strings.HasPrefix(ref, "cloudflare_queue.") {
		d.fail("%s: %q does not name a cloudflare_queue", usedBy, d.env.text(e))
		return "", false
	}
	name := strings.SplitN(strings.TrimPrefix(ref, "cloudflare_queue."), ".", 2)[0]
	name, _, _ = strings.Cut(name, "[")
	b := d.env.resource("cloudflare_queue", name)
	if b == nil {
		d.fail("%s: no resource cloudflare_queue.%s", usedBy, name)
		return "", false
	}
	return d.logical(attr(b, "queue_name"), "cloudflare_queue."+name)
}

// workerModule is the logical name of the worker a module.<x>[0].worker_name
// reference names.
func (d *deriver) workerModule(e hclsyntax.Expression, usedBy string) (string, bool) {
	ref, ok := reference(e)
	if ok && strings.HasPrefix(ref, "module.") {
		name := strings.SplitN(strings.TrimPrefix(ref, "module."), ".", 2)[0]
		name, _, _ = strings.Cut(name, "[")
		if m := d.env.module(name); m != nil {
			return d.logical(attr(m, "worker_name"), "module."+name)
		}
	}
	d.fail("%s: %q does not name a worker module", usedBy, d.env.text(e))
	return "", false
}

type consumer struct {
	worker string
	upstream.QueueConsumer
}

func (d *deriver) queueConsumers() []consumer {
	var out []consumer
	for _, b := range d.env.each("resource", "cloudflare_queue_consumer") {
		usedBy := "cloudflare_queue_consumer." + b.Labels[1]
		worker, ok1 := d.workerModule(attr(b, "script_name"), usedBy)
		queue, ok2 := d.queueName(attr(b, "queue_id"), usedBy)
		dlq, ok3 := d.queueName(attr(b, "dead_letter_queue"), usedBy)
		settings, ok4 := object(attr(b, "settings"))
		if !ok1 || !ok2 || !ok3 || !ok4 {
			if !ok4 {
				d.fail("%s: settings is not an object", usedBy)
			}
			continue
		}
		qc := upstream.QueueConsumer{Queue: queue, DeadLetterQueue: dlq}
		for key, field := range map[string]*int{
			"batch_size": &qc.MaxBatchSize, "max_wait_time_ms": &qc.MaxWaitTimeMs, "max_concurrency": &qc.MaxConcurrency,
			"max_retries": &qc.MaxRetries, "retry_delay": &qc.RetryDelaySeconds,
		} {
			n, ok := literalInt(settings[key])
			if !ok {
				d.fail("%s: settings.%s is not a number", usedBy, key)
			}
			*field = n
		}
		out = append(out, consumer{worker: worker, QueueConsumer: qc})
	}
	return out
}

func (d *deriver) queues(consumers []consumer) []upstream.Queue {
	var out []upstream.Queue
	for _, b := range d.env.each("resource", "cloudflare_queue") {
		usedBy := "cloudflare_queue." + b.Labels[1]
		logical, ok := d.logical(attr(b, "queue_name"), usedBy)
		if !ok {
			continue
		}
		q := upstream.Queue{Logical: logical}
		q.When, _ = d.countWhen(b, usedBy)
		for _, c := range consumers {
			if c.Queue == logical {
				q.DeadLetterQueue = c.DeadLetterQueue
			}
			if c.DeadLetterQueue == logical {
				q.DeadLetterFor = c.Queue
			}
		}
		out = append(out, q)
	}
	return out
}

func find[T any](list []T, match func(T) bool) *T {
	for i := range list {
		if match(list[i]) {
			return &list[i]
		}
	}
	return nil
}

// localPath reads "${var.project_root}/<path>" (directly or through a local)
// as a path relative to the checkout.
func (d *deriver) localPath(e hclsyntax.Expression, usedBy string) (string, bool) {
	if ref, ok := reference(e); ok && strings.HasPrefix(ref, "local.") {
		if local := d.env.locals[strings.TrimPrefix(ref, "local.")]; local != nil {
			e = local
		}
	}
	parts, ok := templateParts(e)
	if ok && len(parts) == 2 && parts[0] == "${var.project_root}" && strings.HasPrefix(parts[1], "/") {
		return path.Clean(strings.TrimPrefix(parts[1], "/")), true
	}
	d.fail("%s: %q is not \"${var.project_root}/<path>\"", usedBy, d.env.text(e))
	return "", false
}

// buildCommand is the local-exec command of the null_resource that builds
// in pkg.
func (d *deriver) buildCommand(pkg string) (string, bool) {
	for _, b := range d.env.each("resource", "null_resource") {
		for _, p := range b.Body.Blocks {
			if p.Type != "provisioner" || len(p.Labels) != 1 || p.Labels[0] != "local-exec" {
				continue
			}
			dir := attr(p, "working_dir")
			if dir == nil {
				continue
			}
			if parts, ok := templateParts(dir); ok && len(parts) == 2 && parts[0] == "${var.project_root}" && path.Clean(strings.TrimPrefix(parts[1], "/")) == pkg {
				return literalString(attr(p, "command"))
			}
		}
	}
	return "", false
}

func (d *deriver) workers(consumers []consumer) []upstream.Worker {
	var out []upstream.Worker
	for _, b := range d.env.each("module", "") {
		if !moduleSource(b, "cloudflare-worker") {
			continue
		}
		if w, ok := d.worker(b, consumers); ok {
			out = append(out, w)
		}
	}
	// Existing workers keep the current contract's order; new ones follow in
	// upstream's.
	return keepOrder(out, d.current.Workers, func(w upstream.Worker) string { return w.Logical })
}

// keepOrder orders list like reference (by key), with entries reference
// lacks after, in their own order: a rewrite moves no line that did not
// change.
func keepOrder[T any](list, reference []T, key func(T) string) []T {
	pos := map[string]int{}
	for i, r := range reference {
		pos[key(r)] = i
	}
	out := slices.Clone(list)
	slices.SortStableFunc(out, func(a, b T) int {
		pa, oka := pos[key(a)]
		pb, okb := pos[key(b)]
		switch {
		case oka && okb:
			return pa - pb
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	return out
}

func (d *deriver) worker(b *hclsyntax.Block, consumers []consumer) (upstream.Worker, bool) {
	usedBy := "module." + b.Labels[0]
	logical, ok := d.logical(attr(b, "worker_name"), usedBy)
	if !ok {
		return upstream.Worker{}, false
	}
	w := upstream.Worker{Logical: logical, Crons: []upstream.Cron{}, QueueConsumers: []upstream.QueueConsumer{}}
	usedBy = "worker " + logical
	w.When, _ = d.countWhen(b, usedBy)
	if bundle, ok := d.localPath(attr(b, "script_path"), usedBy+" script_path"); ok {
		w.Bundle = bundle
		w.Package = path.Dir(path.Dir(bundle)) // packages/<name>/dist/index.js
		w.MainModule = d.mainModule
		if build, ok := d.buildCommand(w.Package); ok {
			w.Build = build
		} else {
			d.fail("%s: no null_resource runs a local-exec build in %s", usedBy, w.Package)
		}
	}
	cur := find(d.current.Workers, func(x upstream.Worker) bool { return x.Logical == logical })
	d.bindings(b, &w, usedBy)
	w.Vars = d.envEntries(b, "plain_text_bindings", cur, func(x *upstream.Worker) []upstream.EnvEntry { return x.Vars }, usedBy)
	w.Secrets = d.envEntries(b, "secrets", cur, func(x *upstream.Worker) []upstream.EnvEntry { return x.Secrets }, usedBy)
	d.crons(b, &w, cur, usedBy)
	for _, c := range consumers {
		if c.worker == logical {
			w.QueueConsumers = append(w.QueueConsumers, c.QueueConsumer)
		}
	}
	for _, do := range w.Bindings.DurableObjects {
		w.DurableObjectClasses = append(w.DurableObjectClasses, upstream.DurableObjectClass{ClassName: do.ClassName, Storage: "sqlite"})
	}
	if del := attr(b, "deleted_classes"); del != nil {
		d.deletedClasses[logical] = d.stringListOrDefault(del, usedBy+" deleted_classes")
	}
	if date, ok := literalString(attr(b, "compatibility_date")); ok {
		d.noteCompat(logical, date, attr(b, "compatibility_flags"))
	} else {
		d.fail("%s: compatibility_date is not a string", usedBy)
	}
	d.checkEnvType(w)
	return w, true
}

// stringListOrDefault reads a constant list, or var.x's default list.
func (d *deriver) stringListOrDefault(e hclsyntax.Expression, usedBy string) []string {
	if name, ok := varName(e); ok {
		if v := d.env.variables[name]; v != nil {
			e = attr(v, "default")
		}
	}
	list, ok := stringList(e)
	if !ok {
		d.fail("%s: not a list of strings (or a variable with one as its default)", usedBy)
	}
	return list
}

func (d *deriver) bindings(b *hclsyntax.Block, w *upstream.Worker, usedBy string) {
	read := func(attrName string, each func(fields map[string]hclsyntax.Expression, when string)) {
		e := attr(b, attrName)
		if e == nil {
			return
		}
		items, err := guardedList(e, nil)
		if err != nil {
			d.fail("%s %s: %v", usedBy, attrName, err)
			return
		}
		for _, it := range items {
			fields, ok := object(it.elem)
			if !ok {
				d.fail("%s %s: %s is not an object", usedBy, attrName, where(it.elem.Range()))
				continue
			}
			when, _ := d.when(it.conds, nil, fmt.Sprintf("%s %s", usedBy, attrName))
			each(fields, when)
		}
	}
	// A binding guarded by nothing but its worker records no condition;
	// service bindings always record one, since the target worker has its own.
	opt := func(when string) string {
		if when == "always" {
			return ""
		}
		return when
	}
	name := func(fields map[string]hclsyntax.Expression, key string) string {
		s, ok := literalString(fields[key])
		if !ok {
			d.fail("%s: binding %s is not a string", usedBy, key)
		}
		return s
	}
	read("d1_databases", func(f map[string]hclsyntax.Expression, when string) {
		ref, _ := reference(f["database_id"])
		db := strings.TrimSuffix(strings.TrimPrefix(ref, "cloudflare_d1_database."), ".id")
		if db == ref || d.env.resource("cloudflare_d1_database", db) == nil {
			d.fail("%s: d1 binding %q: database_id %q is not cloudflare_d1_database.<name>.id", usedBy, name(f, "binding_name"), d.env.text(f["database_id"]))
		}
		w.Bindings.D1 = append(w.Bindings.D1, upstream.D1Binding{Binding: name(f, "binding_name"), Database: db, When: opt(when)})
	})
	read("kv_namespaces", func(f map[string]hclsyntax.Expression, when string) {
		ref, _ := reference(f["namespace_id"])
		mod, _, _ := strings.Cut(strings.TrimPrefix(ref, "module."), ".")
		mod, _, _ = strings.Cut(mod, "[")
		m := d.env.module(mod)
		if m == nil {
			d.fail("%s: kv binding %q: namespace_id %q is not a KV module's output", usedBy, name(f, "binding_name"), d.env.text(f["namespace_id"]))
			return
		}
		ns, _ := d.logical(attr(m, "namespace_name"), "module."+mod)
		w.Bindings.KV = append(w.Bindings.KV, upstream.KVBinding{Binding: name(f, "binding_name"), Namespace: ns, When: opt(when)})
	})
	read("r2_buckets", func(f map[string]hclsyntax.Expression, when string) {
		ref, _ := reference(f["bucket_name"])
		bucket := ""
		if res, ok := strings.CutPrefix(ref, "cloudflare_r2_bucket."); ok {
			bucket = d.r2Logical(strings.TrimSuffix(res, ".name"))
		}
		if bucket == "" {
			d.fail("%s: r2 binding %q: bucket_name %q is not cloudflare_r2_bucket.<name>.name", usedBy, name(f, "binding_name"), d.env.text(f["bucket_name"]))
		}
		w.Bindings.R2 = append(w.Bindings.R2, upstream.R2Binding{Binding: name(f, "binding_name"), Bucket: bucket, When: opt(when)})
	})
	read("queue_bindings", func(f map[string]hclsyntax.Expression, when string) {
		q, _ := d.queueName(f["queue_name"], usedBy+" queue binding")
		w.Bindings.QueueProducers = append(w.Bindings.QueueProducers, upstream.QueueBinding{Binding: name(f, "binding_name"), Queue: q, When: opt(when)})
	})
	read("service_bindings", func(f map[string]hclsyntax.Expression, when string) {
		target, _ := d.logical(f["service_name"], usedBy+" service binding")
		w.Bindings.Services = append(w.Bindings.Services, upstream.ServiceBinding{Binding: name(f, "binding_name"), Worker: target, When: when})
	})
	read("durable_objects", func(f map[string]hclsyntax.Expression, when string) {
		w.Bindings.DurableObjects = append(w.Bindings.DurableObjects, upstream.DurableObjectBinding{Binding: name(f, "binding_name"), ClassName: name(f, "class_name"), When: opt(when)})
	})
}

// r2Logical is the logical name of the bucket resource cloudflare_r2_bucket.<res>.
func (d *deriver) r2Logical(res string) string {
	b := d.env.resource("cloudflare_r2_bucket", res)
	if b == nil {
		return ""
	}
	name := unwrap(attr(b, "name"))
	if c, ok := name.(*hclsyntax.ConditionalExpr); ok {
		name = c.FalseResult
	}
	logical, _ := d.logical(name, "cloudflare_r2_bucket."+res)
	return logical
}

func (d *deriver) envEntries(b *hclsyntax.Block, attrName string, cur *upstream.Worker, curList func(*upstream.Worker) []upstream.EnvEntry, usedBy string) []upstream.EnvEntry {
	out := []upstream.EnvEntry{}
	e := attr(b, attrName)
	if e == nil {
		return out
	}
	items, err := guardedList(e, nil)
	if err != nil {
		d.fail("%s %s: %v", usedBy, attrName, err)
		return out
	}
	for _, it := range items {
		fields, ok := object(it.elem)
		name, nameOK := literalString(fields["name"])
		if !ok || !nameOK || fields["value"] == nil {
			d.fail("%s %s: %s is not {name = \"...\", value = ...}", usedBy, attrName, where(it.elem.Range()))
			continue
		}
		entryBy := fmt.Sprintf("%s %s", usedBy, name)
		src, _ := d.source(fields["value"], entryBy)
		when, _ := d.when(it.conds, &src, entryBy)
		entry := upstream.EnvEntry{Name: name, Source: src, When: when}
		if cur != nil {
			if old := find(curList(cur), func(x upstream.EnvEntry) bool { return x.Name == name }); old != nil {
				entry.Notes = old.Notes
			}
		}
		out = append(out, entry)
	}
	return out
}

func (d *deriver) crons(b *hclsyntax.Block, w *upstream.Worker, cur *upstream.Worker, usedBy string) {
	e := attr(b, "cron_triggers")
	if e == nil {
		return
	}
	schedules, ok := stringList(e)
	if !ok {
		d.fail("%s: cron_triggers is not a list of strings", usedBy)
		return
	}
	for _, s := range schedules {
		c := upstream.Cron{Schedule: s}
		if cur != nil {
			if old := find(cur.Crons, func(x upstream.Cron) bool { return x.Schedule == s }); old != nil {
				c.Purpose = old.Purpose
			}
		}
		if c.Purpose == "" {
			c.Purpose = d.decisions.Crons[w.Logical][s]
		}
		if c.Purpose == "" {
			d.undecided(fmt.Sprintf("cron %q of worker %s is new", s, w.Logical),
				fmt.Sprintf(`"crons": {%q: {%q: "<what it runs>"}}`, w.Logical, s))
		}
		w.Crons = append(w.Crons, c)
	}
}

// noteCompat collects the workers' compatibility settings, which the
// contract records once: every worker must agree.
func (d *deriver) noteCompat(worker, date string, flagsExpr hclsyntax.Expression) {
	flags, ok := stringList(flagsExpr)
	if flagsExpr == nil {
		flags, ok = []string{}, true
	}
	if !ok {
		d.fail("worker %s: compatibility_flags is not a list of strings", worker)
		return
	}
	if d.compat == nil {
		d.compat = &upstream.Compatibility{Date: date, Flags: flags}
		d.compatFrom = worker
		return
	}
	if d.compat.Date != date || !slices.Equal(d.compat.Flags, flags) {
		d.fail("workers %s and %s have different compatibility settings (%s %v, %s %v); the contract records one for all",
			d.compatFrom, worker, d.compat.Date, d.compat.Flags, date, flags)
	}
}

// compatibility writes the workers' shared settings and what the worker
// module gives every worker (workers.dev, observability).
func (d *deriver) compatibility() {
	if d.compat == nil {
		d.fail("%s calls no cloudflare-worker module", productionDir)
		return
	}
	c := &d.out.Compatibility
	c.Date, c.Flags = d.compat.Date, d.compat.Flags
	script := d.workerModuleDir.resource("cloudflare_worker", "this")
	if script == nil {
		d.fail("%s: no resource cloudflare_worker.this", d.workerModuleDir.dir)
		return
	}
	if sub, ok := object(attr(script, "subdomain")); ok {
		if v, ok := constant(sub["enabled"]); ok && !v.IsNull() {
			c.WorkersDev = v.True()
		}
	}
	obs, ok := constant(attr(script, "observability"))
	if !ok {
		c.Observability = nil
		return
	}
	raw, err := ctyjson.Marshal(obs, obs.Type())
	if err != nil {
		d.fail("cloudflare_worker.this observability: %v", err)
		return
	}
	var o struct {
		Enabled          bool    `json:"enabled"`
		HeadSamplingRate float64 `json:"head_sampling_rate"`
		Logs             struct {
			Enabled          bool    `json:"enabled"`
			HeadSamplingRate float64 `json:"head_sampling_rate"`
			InvocationLogs   bool    `json:"invocation_logs"`
		} `json:"logs"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		d.fail("cloudflare_worker.this observability: %v", err)
		return
	}
	c.Observability = &upstream.Observability{Enabled: o.Enabled, HeadSamplingRate: o.HeadSamplingRate,
		Logs: upstream.ObservabilityLogs{Enabled: o.Logs.Enabled, HeadSamplingRate: o.Logs.HeadSamplingRate, InvocationLogs: o.Logs.InvocationLogs}}
}

// conditionDefaultsAndPrune computes each condition's default from the
// inputs' and derived values' defaults, and drops conditions nothing uses
// any more (the sandbox providers' conditions are always kept: the
// sandboxProvider value names them).
func (d *deriver) conditionDefaultsAndPrune() {
	used := map[string]bool{}
	var mark func(name string)
	mark = func(name string) {
		if used[name] {
			return
		}
		used[name] = true
		for _, of := range d.out.Conditions[name].Test.Of {
			mark(of)
		}
	}
	for name := range d.usedConditions {
		mark(name)
	}
	mark("always") // the contract's two built-in conditions
	mark("set")
	walkWhens(d.out, mark)
	if sp := d.out.DerivedValue("sandboxProvider"); sp != nil {
		for _, p := range sp.Allowed {
			mark(p)
		}
	}
	defaults := d.out.Defaults()
	for name, c := range d.out.Conditions {
		if !used[name] {
			delete(d.out.Conditions, name)
			continue
		}
		if c.Test.Op == upstream.OpSet || usesSet(d.out, name) {
			c.Default = nil
		} else if holds, err := d.out.Holds(name, defaults, ""); err == nil {
			c.Default = &holds
		} else {
			d.fail("condition %s: %v", name, err)
		}
		d.out.Conditions[name] = c
	}
}

func usesSet(c *upstream.Contract, name string) bool {
	cond, ok := c.Conditions[name]
	if !ok {
		return false
	}
	if cond.Test.Op == upstream.OpSet {
		return true
	}
	return slices.ContainsFunc(cond.Test.Of, func(of string) bool { return usesSet(c, of) })
}

// walkWhens calls mark with every condition a `when` names.
func walkWhens(c *upstream.Contract, mark func(string)) {
	for _, x := range c.D1Databases {
		mark(x.When)
	}
	for _, x := range c.KVNamespaces {
		mark(x.When)
	}
	for _, x := range c.R2Buckets {
		mark(x.When)
	}
	for _, x := range c.Queues {
		mark(x.When)
	}
	opt := func(w string) {
		if w != "" {
			mark(w)
		}
	}
	for _, w := range c.Workers {
		mark(w.When)
		for _, e := range slices.Concat(w.Vars, w.Secrets) {
			mark(e.When)
		}
		b := w.Bindings
		for _, x := range b.D1 {
			opt(x.When)
		}
		for _, x := range b.KV {
			opt(x.When)
		}
		for _, x := range b.R2 {
			opt(x.When)
		}
		for _, x := range b.QueueProducers {
			opt(x.When)
		}
		for _, x := range b.Services {
			opt(x.When)
		}
		for _, x := range b.DurableObjects {
			opt(x.When)
		}
	}
}

// bundles keeps the recorded reference bundles of the workers that remain
// (a bundle's digest needs a build: the release step's -record writes it),
// and takes a new worker's from the decisions file.
func (d *deriver) bundles() {
	out := map[string]upstream.BundleDigest{}
	for _, w := range d.out.Workers {
		if b, ok := d.current.Artefacts.Bundles[w.Logical]; ok {
			out[w.Logical] = b
		} else if b, ok := d.decisions.Bundles[w.Logical]; ok {
			out[w.Logical] = b
		} else {
			d.undecided(fmt.Sprintf("worker %s is new and has no reference bundle digest", w.Logical),
				fmt.Sprintf(`"bundles": {%q: {"sha256": "<hex>", "bytes": <n>}} from a build of the commit (openinspect-release -unverified -keep prints them), until the release step's -record records it`, w.Logical))
		}
	}
	d.out.Artefacts.Bundles = out
}

var errNoFile = errors.New("missing")

func (d *deriver) readFile(rel string) (string, error) {
	raw, err := d.tree.read(rel)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.ToSlash(rel), errNoFile)
	}
	return string(raw), nil
}
