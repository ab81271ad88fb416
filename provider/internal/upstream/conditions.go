package upstream

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Holds evaluates the named condition. own is the value of the entry the
// condition guards (used by `set`).
func (c *Contract) Holds(name string, v Values, own string) (bool, error) {
	return c.holds(name, v, own, map[string]bool{})
}

func (c *Contract) holds(name string, v Values, own string, visiting map[string]bool) (bool, error) {
	cond, ok := c.Conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %q is not declared", name)
	}
	if visiting[name] {
		return false, fmt.Errorf("condition %q refers to itself", name)
	}
	visiting[name] = true
	defer delete(visiting, name)
	t := cond.Test
	ref := func() (string, error) {
		if t.Input != "" {
			return c.inputValue(v, t.Input)
		}
		return c.derivedValue(v, t.Derived, "")
	}
	switch t.Op {
	case OpAlways:
		return true, nil
	case OpSet:
		return own != "", nil
	case OpIsTrue, OpNonEmpty, OpNonBlank, OpEquals:
		s, err := ref()
		if err != nil {
			return false, err
		}
		switch t.Op {
		case OpIsTrue:
			return s == "true", nil
		case OpNonEmpty:
			return s != "", nil
		case OpNonBlank:
			return strings.TrimSpace(s) != "", nil
		default:
			return s == t.Value, nil
		}
	case OpAllOf, OpAnyOf, OpNot:
		results := make([]bool, 0, len(t.Of))
		for _, sub := range t.Of {
			r, err := c.holds(sub, v, own, visiting)
			if err != nil {
				return false, err
			}
			results = append(results, r)
		}
		switch t.Op {
		case OpNot:
			if len(results) != 1 {
				return false, fmt.Errorf("condition %q: not takes exactly one condition", name)
			}
			return !results[0], nil
		case OpAllOf:
			for _, r := range results {
				if !r {
					return false, nil
				}
			}
			return true, nil
		default:
			for _, r := range results {
				if r {
					return true, nil
				}
			}
			return false, nil
		}
	}
	return false, fmt.Errorf("condition %q: unknown op %q", name, t.Op)
}

func (v *validator) conditions() {
	c := v.c
	for _, name := range slices.Sorted(maps.Keys(c.Conditions)) {
		cond := c.Conditions[name]
		where := fmt.Sprintf("conditions %q", name)
		t := cond.Test
		switch t.Op {
		case OpAlways, OpSet:
		case OpIsTrue, OpNonEmpty, OpNonBlank, OpEquals:
			switch {
			case (t.Input == "") == (t.Derived == ""):
				v.add("%s: op %s needs exactly one of input or derived", where, t.Op)
			case t.Input != "" && c.Input(t.Input) == nil:
				v.add("%s: input %q is not declared in inputs", where, t.Input)
			case t.Derived != "" && c.DerivedValue(t.Derived) == nil:
				v.add("%s: derived %q is not declared in derived", where, t.Derived)
			}
			if t.Op == OpIsTrue && t.Input != "" {
				if in := c.Input(t.Input); in != nil && in.Type != "bool" {
					v.add("%s: isTrue on non-bool input %q", where, t.Input)
				}
			}
		case OpAllOf, OpAnyOf, OpNot:
			if len(t.Of) == 0 || (t.Op == OpNot && len(t.Of) != 1) {
				v.add("%s: op %s has the wrong number of conditions", where, t.Op)
			}
			for _, sub := range t.Of {
				if _, ok := c.Conditions[sub]; !ok {
					v.add("%s: refers to undeclared condition %q", where, sub)
				}
			}
		default:
			v.add("%s: unknown op %q", where, t.Op)
			continue
		}
		if cond.Description == "" {
			v.add("%s: description is required", where)
		}
	}
	if _, ok := c.Conditions["always"]; !ok {
		v.add("conditions: %q must be declared", "always")
	}
	if _, ok := c.Conditions["set"]; !ok {
		v.add("conditions: %q must be declared", "set")
	}
	// Defaults must agree with evaluation under declared defaults.
	defaults := c.Defaults()
	for _, name := range slices.Sorted(maps.Keys(c.Conditions)) {
		cond := c.Conditions[name]
		dependsOnOwn, err := c.usesSet(name, map[string]bool{})
		if err != nil {
			v.add("conditions %q: %v", name, err)
			continue
		}
		if dependsOnOwn {
			if cond.Default != nil {
				v.add("conditions %q: depends on the guarded value, so it has no default", name)
			}
			continue
		}
		if cond.Default == nil {
			v.add("conditions %q: default is required", name)
			continue
		}
		got, err := c.Holds(name, defaults, "")
		if err != nil {
			v.add("conditions %q: %v", name, err)
			continue
		}
		if got != *cond.Default {
			v.add("conditions %q: default says %t but evaluates to %t under declared defaults", name, *cond.Default, got)
		}
	}
}

func (c *Contract) usesSet(name string, visiting map[string]bool) (bool, error) {
	cond, ok := c.Conditions[name]
	if !ok {
		return false, fmt.Errorf("undeclared condition %q", name)
	}
	if visiting[name] {
		return false, fmt.Errorf("cycle through condition %q", name)
	}
	visiting[name] = true
	defer delete(visiting, name)
	if cond.Test.Op == OpSet {
		return true, nil
	}
	for _, sub := range cond.Test.Of {
		u, err := c.usesSet(sub, visiting)
		if err != nil || u {
			return u, err
		}
	}
	return false, nil
}

func (v *validator) when(where, when string) {
	if when == "" {
		v.add("%s: when is required", where)
		return
	}
	if _, ok := v.c.Conditions[when]; !ok {
		v.add("%s: when %q is not declared in conditions", where, when)
	}
}

// optWhen checks an optional when (empty means always) and returns its
// effective value.
func (v *validator) optWhen(where, when string) string {
	if when == "" {
		return "always"
	}
	v.when(where, when)
	return when
}
