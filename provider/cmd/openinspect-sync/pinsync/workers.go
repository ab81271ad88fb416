package pinsync

// The workers: each cloudflare-worker module call, its bundle and build,
// bindings, vars, secrets, crons and Durable Object classes.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

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
