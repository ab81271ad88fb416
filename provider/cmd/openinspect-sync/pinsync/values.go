package pinsync

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// This file translates upstream's Terraform expressions into the contract's
// terms: a condition into a named condition, a value into a source.

// undecided records a fact the derivation cannot settle on its own.
func (d *deriver) undecided(fact, write string) {
	for _, u := range d.undecidedFacts {
		if u.Write == write {
			return // one decision settles every use
		}
	}
	d.undecidedFacts = append(d.undecidedFacts, Undecided{Fact: fact, Write: write})
}

// variable is how the contract refers to an upstream variable: an input (by
// its name) or a derived value; ok is false when it is undecided (recorded).
func (d *deriver) variable(name, usedBy string) (upstream.Source, bool) {
	if in := d.inputByVariable(name); in != nil {
		return upstream.Source{Input: in.Name}, true
	}
	if derived, ok := d.decisions.Variables[name]; ok {
		if d.out.DerivedValue(derived) == nil {
			d.fail("decisions: variables.%s names derived value %q, which the contract does not declare", name, derived)
			return upstream.Source{}, false
		}
		return upstream.Source{Derived: derived}, true
	}
	v := d.env.variables[name]
	if v == nil {
		d.fail("%s uses var.%s, which %s does not declare", usedBy, name, productionDir)
		return upstream.Source{}, false
	}
	typ, def, _ := variableFacts(v)
	d.undecided(fmt.Sprintf("upstream variable %s (type %s, default %s), used by %s, is neither an input nor a derived value", name, typ, jsonText(def), usedBy),
		fmt.Sprintf(`"inputs": {%q: {"name": "<camelCase name>", "description": "<what it is>"}} or "variables": {%q: "<derived value>"}`, name, name))
	return upstream.Source{}, false
}

// variableFacts reads a variable block's type (string, bool, number), its
// default (nil when it has none: required) and sensitivity.
func variableFacts(b *hclsyntax.Block) (typ string, def any, sensitive bool) {
	typ = "string"
	if t := attr(b, "type"); t != nil {
		if ref, ok := reference(t); ok {
			typ = ref // a bare keyword: string, bool, number
		} else {
			typ = "complex"
		}
	}
	if s, ok := constant(attr(b, "sensitive")); ok && s.Type() == cty.Bool {
		sensitive = s.True()
	}
	v, ok := constant(attr(b, "default"))
	if !ok || v.IsNull() {
		return typ, nil, sensitive
	}
	switch v.Type() {
	case cty.String:
		def = v.AsString()
	case cty.Bool:
		def = v.True()
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		def = f
	default:
		def = "<complex>"
	}
	return typ, def, sensitive
}

func (d *deriver) inputByVariable(name string) *upstream.Input {
	for i := range d.out.Inputs {
		if d.out.Inputs[i].UpstreamVariable == name {
			return &d.out.Inputs[i]
		}
	}
	return nil
}

// varName is the variable a var.x reference names.
func varName(e hclsyntax.Expression) (string, bool) {
	ref, ok := reference(e)
	if !ok || !strings.HasPrefix(ref, "var.") || strings.ContainsAny(ref[4:], ".[") {
		return "", false
	}
	return ref[4:], true
}

// test translates a condition expression into a contract test. Sub-terms of
// allOf / anyOf / not are themselves named conditions (matched, or
// undecided).
func (d *deriver) test(e hclsyntax.Expression, usedBy string) (upstream.Test, bool) {
	e = unwrap(e)
	if ref, ok := reference(e); ok && strings.HasPrefix(ref, "local.") {
		local := d.env.locals[strings.TrimPrefix(ref, "local.")]
		if local == nil {
			d.fail("%s uses %s, which %s does not define", usedBy, ref, productionDir)
			return upstream.Test{}, false
		}
		return d.test(local, usedBy)
	}
	if name, ok := varName(e); ok {
		src, ok := d.variable(name, usedBy)
		if !ok {
			return upstream.Test{}, false
		}
		return upstream.Test{Op: upstream.OpIsTrue, Input: src.Input, Derived: src.Derived}, true
	}
	switch x := e.(type) {
	case *hclsyntax.UnaryOpExpr:
		if x.Op == hclsyntax.OpLogicalNot {
			name, ok := d.conditionName(x.Val, usedBy)
			return upstream.Test{Op: upstream.OpNot, Of: []string{name}}, ok
		}
	case *hclsyntax.BinaryOpExpr:
		switch x.Op {
		case hclsyntax.OpLogicalAnd, hclsyntax.OpLogicalOr:
			op := upstream.OpAllOf
			if x.Op == hclsyntax.OpLogicalOr {
				op = upstream.OpAnyOf
			}
			t := upstream.Test{Op: op}
			ok := true
			for _, term := range chain(x, x.Op) {
				name, termOK := d.conditionName(term, usedBy)
				ok = ok && termOK
				t.Of = append(t.Of, name)
			}
			return t, ok
		case hclsyntax.OpNotEqual, hclsyntax.OpEqual:
			lit, litOK := literalString(x.RHS)
			if !litOK {
				break
			}
			if lit == "" {
				t, ok := d.emptinessTest(x.LHS, usedBy)
				if !ok || x.Op == hclsyntax.OpNotEqual {
					return t, ok
				}
				name, ok := d.match(t, d.env.text(x.LHS)+` != ""`, usedBy)
				return upstream.Test{Op: upstream.OpNot, Of: []string{name}}, ok
			}
			if name, ok := varName(x.LHS); ok && x.Op == hclsyntax.OpEqual {
				src, ok := d.variable(name, usedBy)
				return upstream.Test{Op: upstream.OpEquals, Input: src.Input, Derived: src.Derived, Value: lit}, ok
			}
		case hclsyntax.OpGreaterThan:
			if n, ok := literalInt(x.RHS); ok && n == 0 {
				if fn, args, ok := call(x.LHS); ok && fn == "length" && len(args) == 1 {
					if name, ok := varName(args[0]); ok {
						src, ok := d.variable(name, usedBy)
						return upstream.Test{Op: upstream.OpNonEmpty, Input: src.Input, Derived: src.Derived}, ok
					}
				}
			}
		}
	}
	d.fail("%s: condition %q (%s) is not a form this sync translates (var.x, !, &&, ||, == / != \"\" or a string, trimspace(), length(...) > 0, locals of those)",
		usedBy, d.env.text(e), where(e.Range()))
	return upstream.Test{}, false
}

// emptinessTest is the test `lhs != ""`: nonBlank for trimspace(var.x),
// nonEmpty for var.x.
func (d *deriver) emptinessTest(lhs hclsyntax.Expression, usedBy string) (upstream.Test, bool) {
	op := upstream.OpNonEmpty
	if fn, args, ok := call(lhs); ok && fn == "trimspace" && len(args) == 1 {
		op, lhs = upstream.OpNonBlank, args[0]
	}
	name, ok := varName(lhs)
	if !ok {
		d.fail("%s: %q is compared with \"\" but is not var.x or trimspace(var.x)", usedBy, d.env.text(lhs))
		return upstream.Test{}, false
	}
	src, ok := d.variable(name, usedBy)
	return upstream.Test{Op: op, Input: src.Input, Derived: src.Derived}, ok
}

// chain flattens a && b && c (or ||) into its terms, left to right.
func chain(e hclsyntax.Expression, op *hclsyntax.Operation) []hclsyntax.Expression {
	if b, ok := unwrap(e).(*hclsyntax.BinaryOpExpr); ok && b.Op == op {
		return append(chain(b.LHS, op), chain(b.RHS, op)...)
	}
	return []hclsyntax.Expression{e}
}

// conditionName is the named condition an expression is.
func (d *deriver) conditionName(e hclsyntax.Expression, usedBy string) (string, bool) {
	t, ok := d.test(e, usedBy)
	if !ok {
		return "?", false
	}
	return d.match(t, d.env.text(e), usedBy)
}

// match finds the condition whose test is t; a test no condition has is
// undecided.
func (d *deriver) match(t upstream.Test, text, usedBy string) (string, bool) {
	names := make([]string, 0, len(d.out.Conditions))
	for name := range d.out.Conditions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if sameTest(d.out.Conditions[name].Test, t) {
			d.usedConditions[name] = true
			return name, true
		}
	}
	d.undecided(fmt.Sprintf("condition %q (used by %s) is no named condition; its test is %s", text, usedBy, jsonText(t)),
		fmt.Sprintf(`"conditions": {"<name>": {"description": "<when it holds>", "test": %s}}`, jsonText(t)))
	return "?", false
}

func sameTest(a, b upstream.Test) bool {
	if len(a.Of) == 0 && len(b.Of) == 0 {
		a.Of, b.Of = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// when is the condition of a guarded entry: "always" without guards, "set"
// when the guard only tests that the entry's own input is non-empty, else
// the named condition (several guards: their allOf).
func (d *deriver) when(conds []hclsyntax.Expression, own *upstream.Source, usedBy string) (string, bool) {
	switch len(conds) {
	case 0:
		return "always", true
	case 1:
		t, ok := d.test(conds[0], usedBy)
		if !ok {
			return "?", false
		}
		if own != nil && own.Input != "" && t.Op == upstream.OpNonEmpty && t.Input == own.Input {
			return "set", true
		}
		return d.match(t, d.env.text(conds[0]), usedBy)
	}
	t := upstream.Test{Op: upstream.OpAllOf}
	ok := true
	var texts []string
	for _, c := range conds {
		name, cOK := d.conditionName(c, usedBy)
		ok = ok && cOK
		t.Of = append(t.Of, name)
		texts = append(texts, d.env.text(c))
	}
	if !ok {
		return "?", false
	}
	return d.match(t, strings.Join(texts, " && "), usedBy)
}

// countWhen is the condition of a block with `count = cond ? 1 : 0`.
func (d *deriver) countWhen(b *hclsyntax.Block, usedBy string) (string, bool) {
	count := attr(b, "count")
	if count == nil {
		return "always", true
	}
	c, ok := unwrap(count).(*hclsyntax.ConditionalExpr)
	if ok {
		one, oneOK := literalInt(c.TrueResult)
		zero, zeroOK := literalInt(c.FalseResult)
		ok = oneOK && zeroOK && one == 1 && zero == 0
	}
	if !ok {
		d.fail("%s: count %q is not `cond ? 1 : 0`", usedBy, d.env.text(count))
		return "?", false
	}
	return d.when([]hclsyntax.Expression{c.Condition}, nil, usedBy)
}

// source translates a value expression into a source.
func (d *deriver) source(e hclsyntax.Expression, usedBy string) (upstream.Source, bool) {
	e = unwrap(e)
	text := d.env.text(e)
	if s, ok := d.decisions.Expressions[text]; ok {
		return s, true
	}
	if lit, ok := literalString(e); ok {
		return upstream.Source{Value: &lit}, true
	}
	if name, ok := varName(e); ok {
		return d.variable(name, usedBy)
	}
	if fn, args, ok := call(e); ok && len(args) == 1 {
		switch fn {
		case "tostring":
			return d.source(args[0], usedBy)
		case "trimspace":
			s, ok := d.source(args[0], usedBy)
			if ok && s.Input == "" {
				d.fail("%s: trimspace of %q, which is not an input", usedBy, d.env.text(args[0]))
				return s, false
			}
			s.Trim = true
			return s, ok
		}
	}
	if ref, ok := reference(e); ok {
		switch {
		case strings.HasPrefix(ref, "local."):
			if local := d.env.locals[strings.TrimPrefix(ref, "local.")]; local != nil {
				// A local this sync cannot translate is decided by its
				// name, not by its body.
				outer := d.localKey
				if outer == "" {
					d.localKey = ref
				}
				s, ok := d.source(local, usedBy)
				d.localKey = outer
				return s, ok
			}
		case strings.HasPrefix(ref, "random_password.") || strings.HasPrefix(ref, "random_bytes."):
			return d.generatedSource(ref, usedBy)
		}
	}
	if c, ok := e.(*hclsyntax.ConditionalExpr); ok {
		// var.b ? "true" : "false" is the boolean input itself.
		if t, tOK := literalString(c.TrueResult); tOK && t == "true" {
			if f, fOK := literalString(c.FalseResult); fOK && f == "false" {
				if name, ok := varName(c.Condition); ok {
					return d.variable(name, usedBy)
				}
			}
		}
		// x != "" ? x : y is the first non-empty of x and y.
		if b, ok := unwrap(c.Condition).(*hclsyntax.BinaryOpExpr); ok && b.Op == hclsyntax.OpNotEqual {
			if lit, ok := literalString(b.RHS); ok && lit == "" && d.env.text(b.LHS) == d.env.text(c.TrueResult) {
				first, ok1 := d.source(c.TrueResult, usedBy)
				second, ok2 := d.source(c.FalseResult, usedBy)
				return upstream.Source{FirstOf: []upstream.Source{first, second}}, ok1 && ok2
			}
		}
	}
	key := text
	if d.localKey != "" {
		key = d.localKey
	}
	d.undecided(fmt.Sprintf("value %q of %s (%s) is not a form this sync translates", key, usedBy, where(e.Range())),
		fmt.Sprintf(`"expressions": {%q: <source, e.g. {"derived": "<name>"}>}`, key))
	return upstream.Source{}, false
}

// generatedSource is a random_password / random_bytes result: a generated
// secret, named by the current contract or the decisions file.
func (d *deriver) generatedSource(ref, usedBy string) (upstream.Source, bool) {
	parts := strings.Split(ref, ".")
	if len(parts) != 3 {
		d.fail("%s: %s is not <type>.<name>.<attribute>", usedBy, ref)
		return upstream.Source{}, false
	}
	resource := parts[0] + "." + parts[1]
	b := d.env.resource(parts[0], parts[1])
	if b == nil {
		d.fail("%s uses %s, which %s does not declare", usedBy, resource, productionDir)
		return upstream.Source{}, false
	}
	length, ok := literalInt(attr(b, "length"))
	if !ok {
		d.fail("%s: length is not a number", resource)
		return upstream.Source{}, false
	}
	alphabet := upstream.AlphabetBase64Bytes
	if parts[0] == "random_password" {
		special, ok := constant(attr(b, "special"))
		if !ok || special.Type() != cty.Bool || special.True() {
			d.fail("%s: only random_password with special = false (letters and digits) is a generated secret this provider makes", resource)
			return upstream.Source{}, false
		}
		alphabet = upstream.AlphabetAlphanumeric
	}
	g := upstream.Generated{Length: length, Alphabet: alphabet, UpstreamResource: resource}
	if cur := d.current.generatedByResource(resource); cur != nil {
		g.Name, g.Description = cur.Name, cur.Description
	} else if dec, ok := d.decisions.Generated[resource]; ok {
		g.Name, g.Description = dec.Name, dec.Description
	} else {
		d.undecided(fmt.Sprintf("generated secret %s (%d, %s), used by %s, is new", resource, length, alphabet, usedBy),
			fmt.Sprintf(`"generated": {%q: {"name": "<camelCase name>", "description": "<what it is for>"}}`, resource))
		return upstream.Source{}, false
	}
	if !slices.ContainsFunc(d.generated, func(x upstream.Generated) bool { return x.UpstreamResource == resource }) {
		d.generated = append(d.generated, g)
	}
	return upstream.Source{Generated: g.Name, Length: length}, true
}
