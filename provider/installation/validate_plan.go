package installation

import (
	"fmt"
	"slices"

	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
)

// Stage 5: what needs the expansion, checked before anything is registered.

// validatePlan checks what needs the expansion: name lengths, clashes with
// upstream's resources, and that every binding of the spec names something
// this installation has.
func validatePlan(plan *installPlan, s *spec) []error {
	var errs problems
	bad := errs.add
	names := []string{plan.D1Name}
	for _, list := range [][]plannedResource{plan.KV, plan.R2, plan.Queues} {
		for _, r := range list {
			names = append(names, r.Name)
		}
	}
	for _, w := range plan.Workers {
		names = append(names, w.Name)
	}
	for _, n := range names {
		if len(n) > maxNameLength {
			bad("deploymentName", "the name %q is %d characters; Cloudflare allows %d: shorten namePrefix or deploymentName", n, len(n), maxNameLength)
		}
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
	for i, entry := range s.Workers {
		if entry.Bindings == nil {
			continue
		}
		base := fmt.Sprintf("workers[%d].bindings", i)
		b := entry.Bindings
		for _, kind := range []struct {
			field, noun, hint string
			list              []LogicalBinding
			known             []string
			def               string
		}{
			{"d1", "D1 database", "the installation has one D1 database, \"main\"", b.D1, []string{mainDatabase}, mainDatabase},
			{"kv", "KV namespace", "add it to kvNamespaces", b.Kv, logicals(plan.KV), ""},
			{"r2", "R2 bucket", "add it to r2Buckets", b.R2, logicals(plan.R2), ""},
			{"queues", "queue", "add it to queues", b.Queues, logicals(plan.Queues), ""},
			{"services", "worker", "enable that bot or add it to workers", b.Services, workers, ""},
		} {
			for j, lb := range kind.list {
				path := fmt.Sprintf("%s.%s[%d]", base, kind.field, j)
				if lb.Binding == "" {
					bad(path+".binding", "required")
				}
				target := common.Deref(lb.Target, kind.def)
				switch {
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
			if common.Deref(lb.Target, "") == "" {
				bad(path+".target", "required: the Durable Object class the worker exports")
			}
		}
	}
	return errs
}
