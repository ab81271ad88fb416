package upstream

import "fmt"

// Bound is one of a worker's bindings, whatever its kind: Kind is the
// kind's field in the contract's bindings (d1, kv, r2, queueProducers,
// services, durableObjects), Binding the name the worker sees, Target the
// logical name of what it binds, When its condition.
type Bound struct{ Kind, Binding, Target, When string }

// All is every binding in b, kind by kind in the contract's order (that of
// Bindings' fields), so that code handling each binding alike need not
// walk six slices.
func (b Bindings) All() []Bound {
	var out []Bound
	for _, k := range bindingKinds {
		for _, e := range k.entries(b) {
			e.Kind = k.field
			out = append(out, e)
		}
	}
	return out
}

// BindingKinds are the kinds Bound.Kind takes, in the contract's order: code
// that handles each kind its own way checks in a test that it knows them all.
func BindingKinds() []string {
	return mapSlice(bindingKinds, func(k bindingKind) string { return k.field })
}

// declared is a target a binding may name: its logical name and condition.
type declared struct{ logical, when string }

// bindingKind is one kind of a worker's bindings and what the contract
// checks of it: that its target is declared, and that the target exists
// whenever the binding applies.
type bindingKind struct {
	field string // bindings.<field>[i]
	// noun names a target in a condition mismatch ("d1 database"); "" when
	// targets have no condition of their own (the worker's classes).
	noun string
	// missing says a target is not declared; its %q is the target.
	missing string
	// service: the kind binds workers, so a binding states its condition
	// (rather than an empty one meaning always) and cannot name its own
	// worker.
	service bool
	entries func(b Bindings) []Bound // Kind left empty
	targets func(c *Contract, w *Worker) []declared
}

// mapSlice is of applied to each of in.
func mapSlice[T, U any](in []T, of func(T) U) []U {
	out := make([]U, 0, len(in))
	for _, x := range in {
		out = append(out, of(x))
	}
	return out
}

// bindingKinds are the contract's binding kinds in the order a worker's
// bindings are checked.
var bindingKinds = []bindingKind{
	{field: "d1", noun: "d1 database", missing: "database %q is not declared in d1Databases",
		entries: func(b Bindings) []Bound {
			return mapSlice(b.D1, func(x D1Binding) Bound { return Bound{Binding: x.Binding, Target: x.Database, When: x.When} })
		},
		targets: func(c *Contract, _ *Worker) []declared {
			return mapSlice(c.D1Databases, func(x D1Database) declared { return declared{x.Logical, x.When} })
		}},
	{field: "kv", noun: "kv namespace", missing: "namespace %q is not declared in kvNamespaces",
		entries: func(b Bindings) []Bound {
			return mapSlice(b.KV, func(x KVBinding) Bound { return Bound{Binding: x.Binding, Target: x.Namespace, When: x.When} })
		},
		targets: func(c *Contract, _ *Worker) []declared {
			return mapSlice(c.KVNamespaces, func(x KVNamespace) declared { return declared{x.Logical, x.When} })
		}},
	{field: "r2", noun: "r2 bucket", missing: "bucket %q is not declared in r2Buckets",
		entries: func(b Bindings) []Bound {
			return mapSlice(b.R2, func(x R2Binding) Bound { return Bound{Binding: x.Binding, Target: x.Bucket, When: x.When} })
		},
		targets: func(c *Contract, _ *Worker) []declared {
			return mapSlice(c.R2Buckets, func(x R2Bucket) declared { return declared{x.Logical, x.When} })
		}},
	{field: "queueProducers", noun: "queue", missing: "queue %q is not declared in queues",
		entries: func(b Bindings) []Bound {
			return mapSlice(b.QueueProducers, func(x QueueBinding) Bound { return Bound{Binding: x.Binding, Target: x.Queue, When: x.When} })
		},
		targets: func(c *Contract, _ *Worker) []declared {
			return mapSlice(c.Queues, func(x Queue) declared { return declared{x.Logical, x.When} })
		}},
	{field: "services", noun: "worker", missing: "worker %q is not declared in workers", service: true,
		entries: func(b Bindings) []Bound {
			return mapSlice(b.Services, func(x ServiceBinding) Bound { return Bound{Binding: x.Binding, Target: x.Worker, When: x.When} })
		},
		targets: func(c *Contract, _ *Worker) []declared {
			return mapSlice(c.Workers, func(x Worker) declared { return declared{x.Logical, x.When} })
		}},
	{field: "durableObjects", missing: "class %q is not in the worker's durableObjectClasses",
		entries: func(b Bindings) []Bound {
			return mapSlice(b.DurableObjects, func(x DurableObjectBinding) Bound {
				return Bound{Binding: x.Binding, Target: x.ClassName, When: x.When}
			})
		},
		targets: func(_ *Contract, w *Worker) []declared {
			return mapSlice(w.DurableObjectClasses, func(x DurableObjectClass) declared { return declared{logical: x.ClassName} })
		}},
}

// bindings checks each of w's bindings: its name (claim), its condition,
// and its target's declaration and condition.
func (v *validator) bindings(w *Worker, claim func(field, name string)) {
	wn := fmt.Sprintf("worker %q", w.Logical)
	for _, k := range bindingKinds {
		targets := k.targets(v.c, w)
		for i, b := range k.entries(w.Bindings) {
			field := fmt.Sprintf("bindings.%s[%d]", k.field, i)
			claim(field, b.Binding)
			bw := b.When
			if k.service {
				v.when(fmt.Sprintf("%s: %s %q", wn, field, b.Binding), b.When)
			} else {
				bw = v.optWhen(wn+": "+field, b.When)
			}
			if k.service && b.Target == w.Logical {
				v.add("%s: %s %q: a worker cannot bind itself", wn, field, b.Binding)
				continue
			}
			found := false
			for _, t := range targets {
				if t.logical == b.Target {
					found = true
					if k.noun != "" {
						v.targetWhen(wn+": "+field, k.noun, t.logical, t.when, bw, w.When)
					}
				}
			}
			if !found {
				v.add("%s: %s %q: "+k.missing, wn, field, b.Binding, b.Target)
			}
		}
	}
}
