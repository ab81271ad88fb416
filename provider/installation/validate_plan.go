package installation

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
)

// Stage 5: what needs the expansion, checked before anything is registered.

// validatePlan checks what needs the expansion: name lengths, clashes with
// upstream's resources, and that every binding of the spec names something
// this installation has.
func validatePlan(plan *installPlan, s *spec) []error {
	var errs problems
	bad := errs.add
	// Every name the plan made, with the rule of the child that receives it.
	type plannedName struct {
		name string
		rule func(string) string
	}
	names := []plannedName{{plan.D1Name, cloudflare.D1NameProblem}}
	for _, list := range []struct {
		resources []plannedResource
		rule      func(string) string
	}{{plan.KV, cloudflare.KVTitleProblem}, {plan.R2, cloudflare.R2BucketNameProblem}, {plan.Queues, cloudflare.QueueNameProblem}} {
		for _, r := range list.resources {
			if r.Name == plan.resourceName(r.Logical) { // media.bucketName is checked as given
				names = append(names, plannedName{r.Name, list.rule})
			}
		}
	}
	for _, w := range plan.Workers {
		names = append(names, plannedName{w.Name, cloudflare.ScriptNameProblem})
	}
	// The longer of the two given parts is the one to change; one message
	// for the longest name says by how much, not one per resource.
	field := "deploymentName"
	if s.NamePrefix != nil && len(plan.Prefix) > len(plan.DeploymentName) {
		field = "namePrefix"
	}
	longest := ""
	for _, n := range names {
		if len(n.name) > maxNameLength {
			if len(n.name) > len(longest) {
				longest = n.name
			}
		} else if problem := n.rule(n.name); problem != "" {
			bad(field, "%s: change namePrefix or deploymentName", problem)
		}
	}
	if longest != "" {
		bad(field, "the name %q is %d characters; Cloudflare allows %d: shorten %s by %d (or the other part of the names)",
			longest, len(longest), maxNameLength, field, len(longest)-maxNameLength)
	}
	logicals := func(list []plannedResource) []string {
		out := make([]string, 0, len(list))
		for _, r := range list {
			out = append(out, r.Logical)
		}
		return out
	}
	for _, list := range []struct {
		path  string
		extra []string
		all   []string
	}{
		{"kvNamespaces", s.KvNamespaces, logicals(plan.KV)},
		{"r2Buckets", s.R2Buckets, logicals(plan.R2)},
		{"queues", s.Queues, logicals(plan.Queues)},
	} {
		for i, n := range list.extra {
			if count := len(slices.DeleteFunc(slices.Clone(list.all), func(x string) bool { return x != n })); count > 1 {
				bad(fmt.Sprintf("%s[%d]", list.path, i), "%q is already part of the installation", n)
			}
		}
	}
	if s.Web != nil {
		for i, ps := range s.Web.ImagePullSecrets {
			if ps.Name == plan.resourceName("web") {
				bad(fmt.Sprintf("web.imagePullSecrets[%d].name", i), "%q is also the name of the web's own Secret; "+
					"the copy would collide with it", ps.Name)
			}
		}
	}
	workers := make([]string, 0, len(plan.Workers))
	for _, w := range plan.Workers {
		workers = append(workers, w.Logical)
	}
	for i, b := range s.bindings {
		if b == nil {
			continue
		}
		base := fmt.Sprintf("workers[%d].bindings", i)
		for _, kind := range []struct {
			field, noun, hint string
			list              []plannedBinding
			known             []string
		}{
			{"d1", "D1 database", "the installation has one D1 database, \"main\"", b.D1, []string{mainDatabase}},
			{"kv", "KV namespace", "add it to kvNamespaces", b.KV, logicals(plan.KV)},
			{"r2", "R2 bucket", "add it to r2Buckets", b.R2, logicals(plan.R2)},
			{"queues", "queue", "add it to queues", b.Queues, logicals(plan.Queues)},
			{"services", "worker", "enable that bot or add it to workers", b.Services, workers},
		} {
			for j, lb := range kind.list {
				path := fmt.Sprintf("%s.%s[%d]", base, kind.field, j)
				if lb.Binding == "" {
					bad(path+".binding", "required")
				}
				switch target := lb.Target; {
				case target == "":
					bad(path+".target", "required: the logical name of the %s", kind.noun)
				case !slices.Contains(kind.known, target):
					bad(path+".target", "no %s %q in this installation (%s; it has %s)", kind.noun, target, kind.hint, quoteList(kind.known))
				}
			}
		}
		for j, lb := range b.DurableObjects {
			path := fmt.Sprintf("%s.durableObjects[%d]", base, j)
			if lb.Binding == "" {
				bad(path+".binding", "required")
			}
			if lb.Target == "" {
				bad(path+".target", "required: the Durable Object class the worker exports")
			}
		}
	}
	return append(errs, checkBindingNames(plan, s)...)
}

// bindingDecl is one name in a worker's env: a resource binding, a var or a
// secret. path is the spec field that declares it, "" for upstream's.
type bindingDecl struct {
	path, kind, name string
}

// checkBindingNames applies the Worker's binding-name rule (one namespace
// for bindings, vars and secrets; valid names) to each planned worker, so a
// clash the Worker's Check would refuse is reported on the spec's field.
func checkBindingNames(plan *installPlan, s *spec) []error {
	var errs problems
	for _, w := range plan.Workers {
		entry, index := s.workerEntry(w.Logical)
		seen := cloudflare.BindingNames{}
		where := map[string]bindingDecl{}
		for _, d := range workerDeclarations(w, entry, index) {
			if d.name == "" {
				continue // reported as required
			}
			describe := d.path
			if describe == "" {
				describe = fmt.Sprintf("upstream's %s %s of worker %s", d.kind, d.name, w.Logical)
			}
			problem := seen.Add(describe, d.name)
			if problem == "" {
				where[d.name] = d
				continue
			}
			path := d.path
			if path == "" { // a clash with the spec's earlier declaration: report it there
				path = where[d.name].path
			}
			if path == "" {
				path = "upstream"
			}
			errs.add(path, "%s", problem)
		}
	}
	return errs
}

// workerDeclarations lists a planned worker's env names in the order the
// Worker declares them, each with the spec field it comes from. The spec's
// own bindings are listed as given, so a name the entry uses twice (which
// the merge would silently collapse) is seen twice.
func workerDeclarations(w *plannedWorker, entry InstallationWorkerArgs, index int) []bindingDecl {
	var out []bindingDecl
	base := fmt.Sprintf("workers[%d]", index)
	var given map[string][]LogicalBinding
	if b := entry.Bindings; b != nil {
		given = map[string][]LogicalBinding{"d1": b.D1, "kv": b.Kv, "r2": b.R2, "queues": b.Queues,
			"services": b.Services, "durableObjects": b.DurableObjects}
	}
	for _, kind := range []struct {
		field string
		list  []plannedBinding
	}{{"d1", w.D1}, {"kv", w.KV}, {"r2", w.R2}, {"queues", w.Queues}, {"services", w.Services}, {"durableObjects", w.DurableObjects}} {
		for _, b := range kind.list {
			if !slices.ContainsFunc(given[kind.field], func(lb LogicalBinding) bool { return lb.Binding == b.Binding }) {
				out = append(out, bindingDecl{"", kind.field + " binding", b.Binding})
			}
		}
		for j, lb := range given[kind.field] {
			out = append(out, bindingDecl{fmt.Sprintf("%s.bindings.%s[%d].binding", base, kind.field, j), kind.field + " binding", lb.Binding})
		}
	}
	for _, set := range []struct {
		field   string
		planned map[string]valueRef
		given   map[string]bool
	}{{"vars", w.Vars, keysOf(entry.Vars)}, {"secrets", w.Secrets, keysOf(entry.Secrets)}} {
		for _, k := range slices.Sorted(maps.Keys(set.planned)) {
			path := ""
			if set.given[k] {
				path = base + "." + set.field + "." + k
			}
			out = append(out, bindingDecl{path, strings.TrimSuffix(set.field, "s"), k})
		}
	}
	return out
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// workerEntry is the spec's workers entry for a logical worker and its
// index (the last one naming it), or index -1 when the spec has none.
func (s *spec) workerEntry(logical string) (InstallationWorkerArgs, int) {
	entry, index := InstallationWorkerArgs{}, -1
	for i, e := range s.Workers {
		if e.Name == logical {
			entry, index = e, i
		}
	}
	return entry, index
}
