package upstream

import (
	"fmt"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cron"
)

// Worker returns the worker with the logical name, or nil.
func (c *Contract) Worker(logical string) *Worker {
	return find(c.Workers, func(x *Worker) bool { return x.Logical == logical })
}

// Var returns the worker's plain-text var with the name, or nil.
func (w *Worker) Var(name string) *EnvEntry { return findEntry(w.Vars, name) }

// Secret returns the worker's secret with the name, or nil.
func (w *Worker) Secret(name string) *EnvEntry { return findEntry(w.Secrets, name) }

func findEntry(entries []EnvEntry, name string) *EnvEntry {
	return find(entries, func(e *EnvEntry) bool { return e.Name == name })
}

func (v *validator) worker(w *Worker) {
	wn := fmt.Sprintf("worker %q", w.Logical)
	v.when(wn, w.When)
	if w.Bundle == "" || w.MainModule == "" || w.Package == "" || w.Build == "" {
		v.add("%s: package, build, bundle and mainModule are required", wn)
	}
	if w.Package != "" && !strings.HasPrefix(w.Bundle, w.Package+"/") {
		v.add("%s: bundle %q is not inside package %q", wn, w.Bundle, w.Package)
	}
	names := map[string]string{}
	claim := func(field, name string) {
		where := fmt.Sprintf("%s: %s %q", wn, field, name)
		if !envNameRE.MatchString(name) {
			v.add("%s: binding name is not UPPER_SNAKE_CASE", where)
		}
		if prev, dup := names[name]; dup {
			v.add("%s: duplicate binding name (also %s)", where, prev)
			return
		}
		names[name] = field
	}

	classes := map[string]bool{}
	for i, dc := range w.DurableObjectClasses {
		where := fmt.Sprintf("%s: durableObjectClasses[%d] %q", wn, i, dc.ClassName)
		if dc.ClassName == "" || classes[dc.ClassName] {
			v.add("%s: empty or duplicate class", where)
		}
		classes[dc.ClassName] = true
		if dc.Storage != "sqlite" {
			v.add("%s: storage %q; only sqlite classes are declared (free plans refuse others)", where, dc.Storage)
		}
	}
	v.bindings(w, claim)
	for i, e := range w.Vars {
		field := fmt.Sprintf("vars[%d]", i)
		claim(field, e.Name)
		v.entry(fmt.Sprintf("%s: %s %q", wn, field, e.Name), e)
	}
	for i, e := range w.Secrets {
		field := fmt.Sprintf("secrets[%d]", i)
		claim(field, e.Name)
		v.entry(fmt.Sprintf("%s: %s %q", wn, field, e.Name), e)
	}
	schedules := map[string]bool{}
	for i, cr := range w.Crons {
		where := fmt.Sprintf("%s: crons[%d] %q", wn, i, cr.Schedule)
		if err := cron.Validate(cr.Schedule); err != nil {
			v.add("%s: %v", where, err)
		}
		if schedules[cr.Schedule] {
			v.add("%s: duplicate schedule", where)
		}
		schedules[cr.Schedule] = true
	}
	for i, qc := range w.QueueConsumers {
		v.consumer(fmt.Sprintf("%s: queueConsumers[%d] %q", wn, i, qc.Queue), w, qc)
	}
}

func (v *validator) entry(where string, e EnvEntry) {
	v.when(where, e.When)
	v.source(where+": source", e.Source)
}

func (v *validator) consumer(where string, w *Worker, qc QueueConsumer) {
	q := v.c.Queue(qc.Queue)
	if q == nil {
		v.add("%s: queue %q is not declared in queues", where, qc.Queue)
		return
	}
	if q.DeadLetterFor != "" {
		v.add("%s: consumes a dead-letter queue", where)
	}
	v.targetWhen(where, "queue", q.Logical, q.When, "always", w.When)
	if qc.DeadLetterQueue == "" {
		v.add("%s: deadLetterQueue is required", where)
	} else if v.c.Queue(qc.DeadLetterQueue) == nil {
		v.add("%s: deadLetterQueue %q is not declared in queues", where, qc.DeadLetterQueue)
	} else if qc.DeadLetterQueue != q.DeadLetterQueue {
		v.add("%s: deadLetterQueue %q is not the queue's paired dead-letter queue %q", where, qc.DeadLetterQueue, q.DeadLetterQueue)
	}
	bound := func(field string, n, lo, hi int) {
		if n < lo || n > hi {
			v.add("%s: %s %d is outside %d-%d", where, field, n, lo, hi)
		}
	}
	bound("maxBatchSize", qc.MaxBatchSize, 1, 100)
	bound("maxWaitTimeMs", qc.MaxWaitTimeMs, 0, 60000)
	bound("maxConcurrency", qc.MaxConcurrency, 1, 250)
	bound("maxRetries", qc.MaxRetries, 0, 100)
	bound("retryDelaySeconds", qc.RetryDelaySeconds, 0, 43200)
}

func (v *validator) consumersAndOrder() {
	consumers := map[string]string{}
	for _, w := range v.c.Workers {
		for _, qc := range w.QueueConsumers {
			if prev, ok := consumers[qc.Queue]; ok {
				v.add("worker %q: queueConsumers %q: queue is already consumed by worker %q", w.Logical, qc.Queue, prev)
			}
			consumers[qc.Queue] = w.Logical
		}
	}
}

// CompatibilityDate is the Workers compatibility date upstream pins its
// workers to (compatibility.date): the Worker resource's default.
func CompatibilityDate() string { return embedded().Compatibility.Date }

func (v *validator) compatibility() {
	cp := v.c.Compatibility
	if !dateRE.MatchString(cp.Date) {
		v.add("compatibility.date %q is not YYYY-MM-DD", cp.Date)
	}
	if o := cp.Observability; o != nil {
		for name, rate := range map[string]float64{"headSamplingRate": o.HeadSamplingRate, "logs.headSamplingRate": o.Logs.HeadSamplingRate} {
			if rate < 0 || rate > 1 {
				v.add("compatibility.observability.%s %v is not between 0 and 1", name, rate)
			}
		}
	}
}
