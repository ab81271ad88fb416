package installation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Stage 6: every value the component passes to a Worker child, checked with
// the Worker's own rules (cloudflare.CheckArgs) before any child is
// registered. Without it a value only the Worker's Check refuses (an
// out-of-range workers[].observability.headSamplingRate) is refused at a
// preview, but under `up --skip-preview` only after every resource
// registered before that Worker exists. Failures are reported on the
// component's own field (workers[0].observability.headSamplingRate), not the
// child's.

// childResourceRef matches a binding's reference to another child: an ID or
// name that is an output of a resource not registered yet.
var childResourceRef = regexp.MustCompile(`^(d1Databases|kvNamespaces|r2Buckets|queues|queueConsumers)\[\d+\]\.(databaseId|namespaceId|bucketName|queueName|queueId|deadLetterQueue)$`)

// childWorkerProblems runs the Worker's check on each planned worker.
func childWorkerProblems(plan *installPlan, s *spec) []error {
	var errs problems
	for _, w := range plan.Workers {
		entry, index := s.workerEntry(w.Logical)
		args, unknown := childWorkerArgs(plan, w)
		for _, f := range cloudflare.CheckArgs(args, s.workerLimits(), unknown) {
			path, prefix := componentPath(w, entry, index, f.Property)
			errs.add(path, "%s%s", prefix, f.Reason)
		}
	}
	errs = append(errs, cronLimitProblems(plan, s)...)
	return errs
}

// cronLimitProblems: Cloudflare's cron trigger limit is per account, so the
// installation's workers together must fit it (each Worker's own Check sees
// only its own).
func cronLimitProblems(plan *installPlan, s *spec) problems {
	var errs problems
	lim := s.workerLimits()
	total, field := 0, ""
	for _, w := range plan.Workers {
		if len(w.Crons) > lim.MaxCrons {
			return nil // the Worker's own rule reports it, on that worker
		}
		total += len(w.Crons)
		for i, e := range s.Workers {
			if e.Name == w.Logical && e.Crons != nil && len(e.Crons) > 0 {
				field = fmt.Sprintf("workers[%d].crons", i)
			}
		}
	}
	if lim.MaxCrons > 0 && total > lim.MaxCrons {
		if field == "" {
			field = "workers"
		}
		errs.add(field, "the installation's workers have %d cron triggers together; the Workers %s plan allows %d per account "+
			"(openinspect:workersPlan): remove some crons", total, lim.Plan, lim.MaxCrons)
	}
	return errs
}

// childWorkerArgs is what workerProps passes the Worker child, as far as the
// plan knows it: values that are outputs of other children (IDs, generated
// secrets, URLs) and the bundle (checked by checkWorkerBundles) are unknown.
func childWorkerArgs(plan *installPlan, w *plannedWorker) (cloudflare.WorkerArgs, func(string) bool) {
	a := cloudflare.WorkerArgs{Name: w.Name, Crons: w.Crons, Vars: map[string]string{}, Secrets: map[string]string{}}
	a.Observability = w.Observability
	a.Content = "pending" // the bundle: checked by checkWorkerBundles
	pendingVars := map[string]bool{}
	for k, ref := range w.Vars {
		a.Vars[k] = ref.text
		if ref.kind != refLiteral {
			pendingVars[k] = true
		}
	}
	for k := range w.Secrets {
		a.Secrets[k] = ""
	}
	for _, b := range w.D1 {
		a.D1Databases = append(a.D1Databases, cloudflare.D1Binding{Binding: b.Binding})
	}
	for _, b := range w.KV {
		a.KvNamespaces = append(a.KvNamespaces, cloudflare.KvBinding{Binding: b.Binding})
	}
	for _, b := range w.R2 {
		a.R2Buckets = append(a.R2Buckets, cloudflare.R2Binding{Binding: b.Binding})
	}
	for _, b := range w.Queues {
		a.Queues = append(a.Queues, cloudflare.QueueBinding{Binding: b.Binding})
	}
	for _, b := range w.Services {
		service := ""
		if target := plan.worker(b.Target); target != nil {
			service = target.Name
		}
		a.Services = append(a.Services, cloudflare.ServiceBinding{Binding: b.Binding, Service: service})
	}
	for _, b := range w.DurableObjects {
		a.DurableObjects = append(a.DurableObjects, cloudflare.DurableObjectBinding{Binding: b.Binding, ClassName: b.Target})
	}
	for _, c := range w.Consumers {
		a.QueueConsumers = append(a.QueueConsumers, cloudflare.QueueConsumer{MaxBatchSize: new(c.MaxBatchSize),
			MaxWaitTimeMs: new(c.MaxWaitTimeMs), MaxConcurrency: new(c.MaxConcurrency), MaxRetries: new(c.MaxRetries),
			RetryDelaySeconds: new(c.RetryDelaySeconds)})
	}
	unknown := func(path string) bool {
		switch {
		case path == "content" || path == "script" || path == "modules" || path == "mainModule" || path == "compatibilityDate":
			return true
		case strings.HasPrefix(path, "secrets.") || strings.HasPrefix(path, "secrets["):
			return true // values of secrets are checked by validateSecretValues
		case childResourceRef.MatchString(path):
			return true
		}
		for k := range pendingVars {
			if path == family.KeyPath("vars", k) {
				return true
			}
		}
		return false
	}
	return a, unknown
}

// componentPath is the component's field a Worker child's field comes from,
// and a prefix for the reason when it comes from upstream's defaults rather
// than from the spec.
func componentPath(w *plannedWorker, entry InstallationWorkerArgs, index int, field string) (string, string) {
	base := fmt.Sprintf("workers[%d]", index)
	upstreams := func() (string, string) {
		return "upstream", fmt.Sprintf("worker %s's %s (upstream's default): ", w.Logical, field)
	}
	if index < 0 {
		return upstreams()
	}
	head, _, _ := strings.Cut(field, ".")
	head, _, _ = strings.Cut(head, "[")
	switch head {
	case "observability":
		if entry.Observability != nil {
			return base + "." + field, ""
		}
	case "crons":
		if entry.Crons != nil {
			return base + "." + field, ""
		}
	case "vars", "secrets":
		given := keysOf(entry.Vars)
		if head == "secrets" {
			given = keysOf(entry.Secrets)
		}
		if field == head {
			return base + "." + head, ""
		}
		for k := range given {
			if field == family.KeyPath(head, k) {
				return base + "." + field, ""
			}
		}
	default:
		if kind, ok := bindingInputs[head]; ok && entry.Bindings != nil {
			if j := givenBindingIndex(w, entry, head, kind, field); j >= 0 {
				return fmt.Sprintf("%s.bindings.%s[%d]%s", base, kind, j, field[strings.Index(field, "]")+1:]), ""
			}
		}
	}
	return upstreams()
}

// bindingInputs maps the Worker's binding inputs to the component's
// bindings fields.
var bindingInputs = map[string]string{"d1Databases": "d1", "kvNamespaces": "kv", "r2Buckets": "r2", "queues": "queues",
	"services": "services", "durableObjects": "durableObjects"}

// givenBindingIndex is the index in the entry's bindings of the binding the
// child's field names, or -1 when the entry did not give it.
func givenBindingIndex(w *plannedWorker, entry InstallationWorkerArgs, input, kind, field string) int {
	var i int
	if _, err := fmt.Sscanf(field, input+"[%d]", &i); err != nil {
		return -1
	}
	planned := map[string][]plannedBinding{"d1": w.D1, "kv": w.KV, "r2": w.R2, "queues": w.Queues, "services": w.Services,
		"durableObjects": w.DurableObjects}[kind]
	if i >= len(planned) {
		return -1
	}
	b := entry.Bindings
	given := map[string][]LogicalBinding{"d1": b.D1, "kv": b.Kv, "r2": b.R2, "queues": b.Queues, "services": b.Services,
		"durableObjects": b.DurableObjects}[kind]
	return slices.IndexFunc(given, func(lb LogicalBinding) bool { return lb.Binding == planned[i].Binding })
}
