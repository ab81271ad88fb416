package upstream

import (
	"fmt"
)

// Queue returns the queue with the logical name, or nil.
func (c *Contract) Queue(logical string) *Queue {
	return find(c.Queues, func(x *Queue) bool { return x.Logical == logical })
}

func (v *validator) resources() {
	c := v.c
	check := func(kind, logical, when string, seen map[string]bool) {
		where := fmt.Sprintf("%s %q", kind, logical)
		if !logicalRE.MatchString(logical) || seen[logical] {
			v.add("%s: invalid or duplicate logical name", where)
		}
		seen[logical] = true
		v.when(where, when)
	}
	seen := map[string]bool{}
	for _, d := range c.D1Databases {
		check("d1Databases", d.Logical, d.When, seen)
	}
	seen = map[string]bool{}
	for _, k := range c.KVNamespaces {
		check("kvNamespaces", k.Logical, k.When, seen)
	}
	seen = map[string]bool{}
	for _, b := range c.R2Buckets {
		check("r2Buckets", b.Logical, b.When, seen)
		if b.LocationHint != nil {
			v.source(fmt.Sprintf("r2Buckets %q: locationHint", b.Logical), *b.LocationHint)
		}
		if b.NameOverride != nil {
			v.source(fmt.Sprintf("r2Buckets %q: nameOverride", b.Logical), *b.NameOverride)
		}
	}
	seen = map[string]bool{}
	for _, q := range c.Queues {
		check("queues", q.Logical, q.When, seen)
		where := fmt.Sprintf("queues %q", q.Logical)
		switch {
		case q.DeadLetterQueue != "" && q.DeadLetterFor != "":
			v.add("%s: a queue is either a main queue or a dead-letter queue", where)
		case q.DeadLetterQueue != "":
			dlq := c.Queue(q.DeadLetterQueue)
			if dlq == nil {
				v.add("%s: deadLetterQueue %q is not declared in queues", where, q.DeadLetterQueue)
			} else {
				if dlq.DeadLetterFor != q.Logical {
					v.add("%s: deadLetterQueue %q does not name it back in deadLetterFor", where, q.DeadLetterQueue)
				}
				if dlq.When != q.When {
					v.add("%s: deadLetterQueue %q has when %q, queue has %q", where, dlq.Logical, dlq.When, q.When)
				}
			}
		case q.DeadLetterFor != "":
			main := c.Queue(q.DeadLetterFor)
			if main == nil || main.DeadLetterQueue != q.Logical {
				v.add("%s: deadLetterFor %q does not name it as its deadLetterQueue", where, q.DeadLetterFor)
			}
		}
	}
	seen = map[string]bool{}
	for _, w := range c.Workers {
		if !logicalRE.MatchString(w.Logical) || seen[w.Logical] {
			v.add("workers %q: invalid or duplicate logical name", w.Logical)
		}
		seen[w.Logical] = true
	}
	if c.Worker("control-plane") == nil {
		v.add("workers: %q must be declared", "control-plane")
	}
}

// targetWhen checks that a binding's target exists whenever the binding does:
// the target is unconditional or shares the binding's or the worker's condition.
func (v *validator) targetWhen(where, targetKind, target, targetWhen, bindingWhen, workerWhen string) {
	if targetWhen == "always" || targetWhen == bindingWhen || targetWhen == workerWhen {
		return
	}
	v.add("%s: %s %q exists only when %q, but the binding applies when %q in a worker deployed when %q",
		where, targetKind, target, targetWhen, bindingWhen, workerWhen)
}
