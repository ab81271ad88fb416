package upstream

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DefaultString renders the default as a worker would receive it: booleans as
// "true"/"false", numbers in plain decimal. A required input renders as "".
func (i Input) DefaultString() string {
	s, _ := render(i.Default)
	return s
}

// Kind reports which kind the source is, or "" when it sets none or several.
func (s Source) Kind() string {
	var kinds []string
	if s.Value != nil {
		kinds = append(kinds, KindValue)
	}
	if s.Input != "" {
		kinds = append(kinds, KindInput)
	}
	if s.Generated != "" {
		kinds = append(kinds, KindGenerated)
	}
	if s.Derived != "" {
		kinds = append(kinds, KindDerived)
	}
	if s.FirstOf != nil {
		kinds = append(kinds, KindFirstOf)
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// Input returns the declared input, or nil.
func (c *Contract) Input(name string) *Input {
	return find(c.Inputs, func(x *Input) bool { return x.Name == name })
}

// GeneratedSecret returns the declared generated secret, or nil.
func (c *Contract) GeneratedSecret(name string) *Generated {
	return find(c.Generated, func(x *Generated) bool { return x.Name == name })
}

// DerivedValue returns the declared derived value, or nil.
func (c *Contract) DerivedValue(name string) *Derived {
	return find(c.Derived, func(x *Derived) bool { return x.Name == name })
}

func (c *Contract) inputValue(v Values, name string) (string, error) {
	if s, ok := v.Inputs[name]; ok {
		return s, nil
	}
	in := c.Input(name)
	if in == nil {
		return "", fmt.Errorf("input %q is not declared", name)
	}
	return in.DefaultString(), nil
}

func (c *Contract) derivedValue(v Values, name, worker string) (string, error) {
	d := c.DerivedValue(name)
	if d == nil {
		return "", fmt.Errorf("derived value %q is not declared", name)
	}
	key := name
	if d.PerWorker {
		key = name + ":" + worker
	}
	if s, ok := v.Derived[key]; ok {
		return s, nil
	}
	if d.Default != nil {
		return *d.Default, nil
	}
	return "", nil
}

// Resolve computes a source's value for an installation.
func (c *Contract) Resolve(s Source, v Values) (string, error) {
	var out string
	switch s.Kind() {
	case KindValue:
		out = *s.Value
	case KindInput:
		val, err := c.inputValue(v, s.Input)
		if err != nil {
			return "", err
		}
		out = val
	case KindGenerated:
		if c.GeneratedSecret(s.Generated) == nil {
			return "", fmt.Errorf("generated secret %q is not declared", s.Generated)
		}
		out = v.Generated[s.Generated]
	case KindDerived:
		val, err := c.derivedValue(v, s.Derived, s.Worker)
		if err != nil {
			return "", err
		}
		out = val
	case KindFirstOf:
		for _, alt := range s.FirstOf {
			val, err := c.Resolve(alt, v)
			if err != nil {
				return "", err
			}
			if val != "" {
				return val, nil
			}
		}
		return "", nil
	default:
		return "", errors.New("source must set exactly one kind")
	}
	if s.Trim {
		out = strings.TrimSpace(out)
	}
	return out, nil
}

// Defaults returns Values holding every declared default, the state the
// conditions' Default fields describe.
func (c *Contract) Defaults() Values {
	v := Values{Inputs: map[string]string{}, Derived: map[string]string{}, Generated: map[string]string{}}
	for _, in := range c.Inputs {
		v.Inputs[in.Name] = in.DefaultString()
	}
	for _, d := range c.Derived {
		if d.Default != nil && !d.PerWorker {
			v.Derived[d.Name] = *d.Default
		}
	}
	return v
}

func render(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("unsupported default of type %T", v)
}

func (v *validator) declarations() {
	seen := map[string]bool{}
	for _, in := range v.c.Inputs {
		where := fmt.Sprintf("inputs %q", in.Name)
		if in.Name == "" || seen[in.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[in.Name] = true
		if in.Description == "" || in.UpstreamVariable == "" {
			v.add("%s: description and upstreamVariable are required", where)
		}
		if in.Required {
			if in.Default != nil {
				v.add("%s: a required input has no default", where)
			}
			continue
		}
		ok := false
		switch in.Type {
		case "string":
			_, ok = in.Default.(string)
		case "bool":
			_, ok = in.Default.(bool)
		case "number":
			_, ok = in.Default.(float64)
		default:
			v.add("%s: type %q is not string, bool or number", where, in.Type)
			continue
		}
		if !ok {
			v.add("%s: default %v does not have type %s", where, in.Default, in.Type)
		}
	}
	seen = map[string]bool{}
	for _, g := range v.c.Generated {
		where := fmt.Sprintf("generated %q", g.Name)
		if g.Name == "" || seen[g.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[g.Name] = true
		if g.Length <= 0 {
			v.add("%s: length must be positive", where)
		}
		if g.Alphabet != AlphabetAlphanumeric && g.Alphabet != AlphabetBase64Bytes {
			v.add("%s: alphabet %q is not %s or %s", where, g.Alphabet, AlphabetAlphanumeric, AlphabetBase64Bytes)
		}
	}
	seen = map[string]bool{}
	for _, d := range v.c.Derived {
		where := fmt.Sprintf("derived %q", d.Name)
		if d.Name == "" || seen[d.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[d.Name] = true
		if d.Default != nil && len(d.Allowed) > 0 && !slices.Contains(d.Allowed, *d.Default) {
			v.add("%s: default %q is not among allowed %v", where, *d.Default, d.Allowed)
		}
	}
}

func (v *validator) source(where string, s Source) {
	switch s.Kind() {
	case "":
		v.add("%s: source must set exactly one of value, input, generated, derived, firstOf", where)
		return
	case KindValue:
	case KindInput:
		if v.c.Input(s.Input) == nil {
			v.add("%s: input %q is not declared in inputs", where, s.Input)
		}
	case KindGenerated:
		g := v.c.GeneratedSecret(s.Generated)
		if g == nil {
			v.add("%s: generated %q is not declared in generated", where, s.Generated)
		} else {
			v.usedGen[g.Name] = true
			if s.Length != g.Length {
				v.add("%s: generated %q has length %d, source says %d", where, s.Generated, g.Length, s.Length)
			}
		}
	case KindDerived:
		d := v.c.DerivedValue(s.Derived)
		switch {
		case d == nil:
			v.add("%s: derived %q is not declared in derived", where, s.Derived)
		case d.PerWorker && v.c.Worker(s.Worker) == nil:
			v.add("%s: derived %q needs a declared worker, got %q", where, s.Derived, s.Worker)
		case !d.PerWorker && s.Worker != "":
			v.add("%s: derived %q takes no worker", where, s.Derived)
		}
	case KindFirstOf:
		if len(s.FirstOf) < 2 {
			v.add("%s: firstOf needs at least two sources", where)
		}
		for i, alt := range s.FirstOf {
			v.source(fmt.Sprintf("%s.firstOf[%d]", where, i), alt)
		}
	}
	if s.Length != 0 && s.Kind() != KindGenerated {
		v.add("%s: length only applies to generated sources", where)
	}
	if s.Worker != "" && s.Kind() != KindDerived {
		v.add("%s: worker only applies to derived sources", where)
	}
	if s.Trim && s.Kind() != KindInput {
		v.add("%s: trim only applies to input sources", where)
	}
}
