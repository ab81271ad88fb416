package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Format is contract.json's one layout, which every writer of the file uses
// (the pin sync, the release step's -record) so that a rewrite changes only
// the facts that changed: the fields in the Go types' order (maps sorted by
// key), two-space indentation, and a record kept on one line when it is
// short (at most inlineWidth characters written compactly) or flat (no
// nested object or array, at most inlineFields members), so that an input, a
// var or a cron reads as one line.
func Format(c *Contract) ([]byte, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	root, err := readNode(dec)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	root.write(&out, "")
	out.WriteByte('\n')
	return out.Bytes(), nil
}

const (
	inlineWidth  = 140
	inlineFields = 7
)

// node is a JSON value that keeps its members' order: the JSON is Go's
// marshalling of the types, whose field order is the layout's.
type node struct {
	scalar  string // the JSON text of a string, number, boolean or null
	object  bool
	keys    []string // object member names, in order
	members []*node
}

func (n *node) container() bool { return n.scalar == "" }

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{object: t == '{'}
		for dec.More() {
			if n.object {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key.(string))
			}
			m, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.members = append(n.members, m)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case json.Number:
		return &node{scalar: t.String()}, nil
	case nil:
		return &node{scalar: "null"}, nil
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("formatting contract.json: %w", err)
		}
		return &node{scalar: string(b)}, nil
	}
}

// depth is 0 for a scalar, 1 for a container of scalars (or an empty one).
func (n *node) depth() int {
	if !n.container() {
		return 0
	}
	d := 0
	for _, m := range n.members {
		d = max(d, m.depth())
	}
	return d + 1
}

func (n *node) compact() string {
	var b strings.Builder
	n.writeCompact(&b)
	return b.String()
}

func (n *node) writeCompact(w io.StringWriter) {
	if !n.container() {
		_, _ = w.WriteString(n.scalar)
		return
	}
	open, close := "[", "]"
	if n.object {
		open, close = "{", "}"
	}
	_, _ = w.WriteString(open)
	for i, m := range n.members {
		if i > 0 {
			_, _ = w.WriteString(", ")
		}
		if n.object {
			_, _ = w.WriteString(quote(n.keys[i]) + ": ")
		}
		m.writeCompact(w)
	}
	_, _ = w.WriteString(close)
}

func (n *node) inline() bool {
	if !n.container() || len(n.members) == 0 {
		return true
	}
	return len(n.compact()) <= inlineWidth || (n.depth() == 1 && len(n.members) <= inlineFields)
}

func (n *node) write(out *bytes.Buffer, indent string) {
	if n.inline() {
		n.writeCompact(out)
		return
	}
	open, close := "[", "]"
	if n.object {
		open, close = "{", "}"
	}
	out.WriteString(open + "\n")
	inner := indent + "  "
	for i, m := range n.members {
		out.WriteString(inner)
		if n.object {
			out.WriteString(quote(n.keys[i]) + ": ")
		}
		m.write(out, inner)
		if i < len(n.members)-1 {
			out.WriteByte(',')
		}
		out.WriteByte('\n')
	}
	out.WriteString(indent + close)
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
