package family

import (
	"strconv"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// At a preview, an input that depends on a resource not created yet is
// computed, at any depth: a whole list, one entry's field, one secret's
// value. infer.DefaultCheck decodes a computed value as the zero value, so a
// check that reads the decoded struct cannot tell "not known yet" from
// "empty"; it asks the helpers below, by the failure's own field path.
//
// Paths are the ones check failures name: "name", "assets.directory",
// "services[0].service", "secrets.KEY", or a quoted key for a key that is
// not a plain name, `assets.files["/index.html"]` (see KeyPath).

// IsUnknown reports whether the input at path is not known yet: the value
// there, any value above it (the list or object holding it) or, for a
// container checked as a whole, anything inside it is computed. A path that
// names nothing (an absent optional input, an index past the end) is known:
// it is absent.
func IsUnknown(inputs property.Map, path string) bool {
	v, computed := lookup(inputs, path)
	return computed || v.HasComputed()
}

// KnownFailures drops each failure whose field is unknown (IsUnknown): a
// check of the zero value a computed input decodes as says nothing about
// the value it will have. Checks that read one field and report another
// still guard that field themselves.
func KnownFailures(inputs property.Map, failures []p.CheckFailure) []p.CheckFailure {
	out := failures[:0]
	for _, f := range failures {
		if f.Property != "" && IsUnknown(inputs, f.Property) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// KeyPath is the path of a map entry: base.key for a key of letters,
// digits, '_' and '-', else base["key"] quoted, so that a key holding a
// dot, a newline or nothing at all still names one field on one line.
func KeyPath(base, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return base + "." + key
	}
	return base + "[" + strconv.Quote(key) + "]"
}

// lookup walks path from inputs: the value it names (null when it names
// nothing) and whether that value or one above it is computed. A path that
// does not parse names nothing.
func lookup(inputs property.Map, path string) (property.Value, bool) {
	segments, ok := parsePath(path)
	if !ok {
		return property.Value{}, false
	}
	v := property.New(inputs)
	for _, seg := range segments {
		if v.IsComputed() {
			return v, true
		}
		switch {
		case seg.key != nil && v.IsMap():
			next, found := v.AsMap().GetOk(*seg.key)
			if !found {
				return property.Value{}, false
			}
			v = next
		case seg.key == nil && v.IsArray() && seg.index < v.AsArray().Len():
			v = v.AsArray().Get(seg.index)
		default:
			return property.Value{}, false
		}
	}
	return v, v.IsComputed()
}

// segment is one step of a path: a map key, or a list index when key is nil.
type segment struct {
	key   *string
	index int
}

// parsePath splits a path into keys and indexes: name, .name, [3], ["key"].
// A plain key runs to the next '.' or '[', so it may hold '-' or start
// with a digit ("secrets.1ABC", "vars.MY-VAR"), as failure paths do.
func parsePath(path string) ([]segment, bool) {
	var out []segment
	for i := 0; i < len(path); {
		switch path[i] {
		case '[':
			end := strings.IndexByte(path[i:], ']')
			if end < 0 {
				return nil, false
			}
			inner := path[i+1 : i+end]
			if strings.HasPrefix(inner, `"`) {
				// A quoted key may hold ']': find the closing quote first.
				q, err := strconv.QuotedPrefix(path[i+1:])
				if err != nil || !strings.HasPrefix(path[i+1+len(q):], "]") {
					return nil, false
				}
				key, _ := strconv.Unquote(q)
				out = append(out, segment{key: &key})
				i += 1 + len(q) + 1
				continue
			}
			n, err := strconv.Atoi(inner)
			if err != nil || n < 0 {
				return nil, false
			}
			out = append(out, segment{index: n})
			i += end + 1
		case '.':
			if i == 0 {
				return nil, false
			}
			i++
			fallthrough
		default:
			end := strings.IndexAny(path[i:], ".[")
			if end < 0 {
				end = len(path) - i
			}
			if end == 0 {
				return nil, false
			}
			key := path[i : i+end]
			out = append(out, segment{key: &key})
			i += end
		}
	}
	return out, len(out) > 0
}
