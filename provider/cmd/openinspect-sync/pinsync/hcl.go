package pinsync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// tfDir is one Terraform directory (a root module or a module), parsed with
// HCL's native syntax: its top-level blocks in file order (files by name).
type tfDir struct {
	dir       string
	src       map[string][]byte // file name -> bytes, for expression text
	blocks    []*hclsyntax.Block
	variables map[string]*hclsyntax.Block
	locals    map[string]hclsyntax.Expression
}

func parseDir(dir string) (*tfDir, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no .tf files", dir)
	}
	slices.Sort(names)
	d := &tfDir{dir: dir, src: map[string][]byte{}, variables: map[string]*hclsyntax.Block{}, locals: map[string]hclsyntax.Expression{}}
	p := hclparse.NewParser()
	for _, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, diags := p.ParseHCL(raw, name)
		if diags.HasErrors() {
			return nil, fmt.Errorf("parsing %s: %w", name, diags)
		}
		d.src[name] = raw
		body := f.Body.(*hclsyntax.Body)
		for _, b := range body.Blocks {
			d.blocks = append(d.blocks, b)
			switch b.Type {
			case "variable":
				if len(b.Labels) == 1 {
					d.variables[b.Labels[0]] = b
				}
			case "locals":
				for name, attr := range b.Body.Attributes {
					d.locals[name] = attr.Expr
				}
			}
		}
	}
	return d, nil
}

// each returns the blocks of a type whose first label is label (any when
// label is ""), in file order.
func (d *tfDir) each(typ, label string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range d.blocks {
		if b.Type == typ && (label == "" || len(b.Labels) > 0 && b.Labels[0] == label) {
			out = append(out, b)
		}
	}
	return out
}

// resource finds `resource "<typ>" "<name>"`.
func (d *tfDir) resource(typ, name string) *hclsyntax.Block {
	for _, b := range d.each("resource", typ) {
		if len(b.Labels) == 2 && b.Labels[1] == name {
			return b
		}
	}
	return nil
}

// module finds `module "<name>"`.
func (d *tfDir) module(name string) *hclsyntax.Block {
	mods := d.each("module", name)
	if len(mods) == 0 {
		return nil
	}
	return mods[0]
}

// text is an expression's source, whitespace collapsed: the key of the
// decisions file's expressions and what error messages quote.
func (d *tfDir) text(e hclsyntax.Expression) string {
	r := e.Range()
	src := d.src[r.Filename]
	if src == nil || r.End.Byte > len(src) {
		return fmt.Sprintf("<expression at %s>", r)
	}
	return strings.Join(strings.Fields(string(src[r.Start.Byte:r.End.Byte])), " ")
}

func where(r hcl.Range) string {
	return fmt.Sprintf("%s:%d", filepath.Base(r.Filename), r.Start.Line)
}

// attr is a block's attribute expression, or nil.
func attr(b *hclsyntax.Block, name string) hclsyntax.Expression {
	if a, ok := b.Body.Attributes[name]; ok {
		return a.Expr
	}
	return nil
}

// unwrap strips parentheses.
func unwrap(e hclsyntax.Expression) hclsyntax.Expression {
	for {
		p, ok := e.(*hclsyntax.ParenthesesExpr)
		if !ok {
			return e
		}
		e = p.Expression
	}
}

// constant evaluates an expression that needs no variables (a literal, a
// list or object of literals).
func constant(e hclsyntax.Expression) (cty.Value, bool) {
	if e == nil {
		return cty.NilVal, false
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return cty.NilVal, false
	}
	return v, true
}

// literalString is a constant string expression's value.
func literalString(e hclsyntax.Expression) (string, bool) {
	v, ok := constant(e)
	if !ok || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// literalInt is a constant whole number's value.
func literalInt(e hclsyntax.Expression) (int, bool) {
	v, ok := constant(e)
	if !ok || v.IsNull() || v.Type() != cty.Number {
		return 0, false
	}
	bf := v.AsBigFloat()
	if !bf.IsInt() {
		return 0, false
	}
	i, _ := bf.Int64()
	return int(i), true
}

// stringList is a constant list of strings.
func stringList(e hclsyntax.Expression) ([]string, bool) {
	v, ok := constant(e)
	if !ok || v.IsNull() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
		return nil, false
	}
	out := []string{}
	for it := v.ElementIterator(); it.Next(); {
		_, el := it.Element()
		if el.IsNull() || el.Type() != cty.String {
			return nil, false
		}
		out = append(out, el.AsString())
	}
	return out, true
}

// reference renders a traversal such as var.x, local.y,
// random_password.z.result or module.m[0].out; ok is false for any other
// expression.
func reference(e hclsyntax.Expression) (string, bool) {
	st, ok := unwrap(e).(*hclsyntax.ScopeTraversalExpr)
	if !ok {
		return "", false
	}
	var b strings.Builder
	for _, step := range st.Traversal {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			switch {
			case s.Key.Type() == cty.Number:
				bf := s.Key.AsBigFloat()
				i, _ := bf.Int64()
				b.WriteString("[" + strconv.FormatInt(i, 10) + "]")
			case s.Key.Type() == cty.String:
				b.WriteString(strconv.Quote(s.Key.AsString()))
			default:
				return "", false
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// call is a function call's name and arguments, when e is one.
func call(e hclsyntax.Expression) (string, []hclsyntax.Expression, bool) {
	c, ok := unwrap(e).(*hclsyntax.FunctionCallExpr)
	if !ok {
		return "", nil, false
	}
	return c.Name, c.Args, true
}

// object reads an object constructor's attributes by key.
func object(e hclsyntax.Expression) (map[string]hclsyntax.Expression, bool) {
	o, ok := unwrap(e).(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil, false
	}
	out := map[string]hclsyntax.Expression{}
	for _, item := range o.Items {
		key := hcl.ExprAsKeyword(item.KeyExpr)
		if key == "" {
			k, ok := literalString(item.KeyExpr)
			if !ok {
				return nil, false
			}
			key = k
		}
		out[key] = item.ValueExpr
	}
	return out, true
}

// guarded is an element of a list built with concat and `cond ? [...] : []`:
// the element and the conditions it is under (all must hold).
type guarded struct {
	conds []hclsyntax.Expression
	elem  hclsyntax.Expression
}

var errNotAList = errors.New("not a list this sync can read")

// guardedList flattens a list expression made of tuples, concat(...) and
// conditionals whose false side is an empty list.
func guardedList(e hclsyntax.Expression, conds []hclsyntax.Expression) ([]guarded, error) {
	e = unwrap(e)
	switch x := e.(type) {
	case *hclsyntax.TupleConsExpr:
		out := make([]guarded, 0, len(x.Exprs))
		for _, el := range x.Exprs {
			out = append(out, guarded{conds: conds, elem: el})
		}
		return out, nil
	case *hclsyntax.ConditionalExpr:
		if f, ok := unwrap(x.FalseResult).(*hclsyntax.TupleConsExpr); ok && len(f.Exprs) == 0 {
			return guardedList(x.TrueResult, append(slices.Clone(conds), x.Condition))
		}
	case *hclsyntax.FunctionCallExpr:
		if x.Name == "concat" {
			var out []guarded
			for _, arg := range x.Args {
				part, err := guardedList(arg, conds)
				if err != nil {
					return nil, err
				}
				out = append(out, part...)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: %w (only lists, concat() and `cond ? [...] : []`)", where(e.Range()), errNotAList)
}

// templateParts splits a string template into its literal and reference
// parts: "open-inspect-x-${local.name_suffix}" is ["open-inspect-x-",
// "${local.name_suffix}"].
func templateParts(e hclsyntax.Expression) ([]string, bool) {
	t, ok := unwrap(e).(*hclsyntax.TemplateExpr)
	if !ok {
		return nil, false
	}
	var parts []string
	for _, p := range t.Parts {
		if s, ok := literalString(p); ok {
			parts = append(parts, s)
			continue
		}
		ref, ok := reference(p)
		if !ok {
			return nil, false
		}
		parts = append(parts, "${"+ref+"}")
	}
	return parts, true
}
