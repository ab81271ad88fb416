package webbuild

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"golang.org/x/net/html"

	"github.com/openinspect/pulumi-openinspect/provider/esm"
)

// substituter replaces each placeholder by its value, escaped for the
// context it stands in. It works in layers: a file is read in the grammar
// its name says (JS, HTML, JSON or text); a string that holds a placeholder
// is decoded, its text substituted as the layer inside (an HTML document, or
// text whose JSON strings get JSON escapes), and encoded again for the layer
// outside. So a value in JSON inside a JS string inside an HTML <script>
// inside a JSON cache file is escaped four times, innermost first.
type substituter struct {
	tokens []string          // the placeholders, in Variables order
	values map[string]string // placeholder → value
}

func newSubstituter(m *Manifest, v Values) *substituter {
	s := &substituter{values: map[string]string{}}
	vals := v.byVariable()
	for _, name := range Variables {
		tok := m.Placeholders[name]
		s.tokens = append(s.tokens, tok)
		s.values[tok] = vals[name]
	}
	return s
}

// contains reports whether text holds any placeholder.
func (s *substituter) contains(text string) bool {
	for _, t := range s.tokens {
		if strings.Contains(text, t) {
			return true
		}
	}
	return false
}

// next finds the first placeholder in text at or after from.
func (s *substituter) next(text string, from int) (at int, tok string) {
	at = -1
	for _, t := range s.tokens {
		if i := strings.Index(text[from:], t); i >= 0 && (at < 0 || from+i < at) {
			at, tok = from+i, t
		}
	}
	return at, tok
}

// Kinds of file, by name.
const (
	kindJS      = "JavaScript"
	kindHTML    = "HTML"
	kindJSON    = "JSON"
	kindText    = "text"
	kindUnknown = ""
)

func kindOf(name string) string {
	switch strings.ToLower(path.Ext(name)) {
	case ".js", ".mjs", ".cjs":
		return kindJS
	case ".html", ".htm":
		return kindHTML
	case ".json", ".cache", ".meta", ".map":
		// OpenNext's prerendered cache entries (.cache) are JSON.
		return kindJSON
	case ".rsc", ".txt", ".body":
		return kindText
	}
	return kindUnknown
}

// file substitutes in one file; the text is returned as it was when it
// holds no placeholder.
func (s *substituter) file(name, text string) (string, error) {
	if !s.contains(text) {
		return text, nil
	}
	var out string
	var err error
	switch kind := kindOf(name); kind {
	case kindJS:
		out, err = s.js(text)
	case kindHTML:
		out, err = s.html(text)
	case kindJSON:
		out, err = s.json(text)
	case kindText:
		out = s.text(text)
	default:
		return "", fmt.Errorf("holds a NEXT_PUBLIC_* placeholder, but %q is not a kind of file whose context this substitution knows (.js, .mjs, .cjs, .html, .json, .cache, .meta, .rsc, .txt, .body)", path.Ext(name))
	}
	if err != nil {
		return "", err
	}
	if at, tok := s.next(out, 0); at >= 0 {
		return "", fmt.Errorf("the placeholder %s at byte %d stands outside any string this substitution reads (a comment, a regular expression, code?)", tok, offsetIn(text, tok, out, at))
	}
	return out, nil
}

// offsetIn maps a leftover placeholder back to the input for the error
// message: the n-th occurrence of tok in out is the n-th left in text.
func offsetIn(text, tok, out string, at int) int {
	n := strings.Count(out[:at], tok)
	i := 0
	for ; n >= 0; n-- {
		j := strings.Index(text[i:], tok)
		if j < 0 {
			return at
		}
		if n == 0 {
			return i + j
		}
		i += j + len(tok)
	}
	return at
}

// inner substitutes in a string's decoded text: an HTML document, or text.
func (s *substituter) inner(text string) (string, error) {
	if looksLikeHTMLDocument(text) {
		return s.html(text)
	}
	return s.text(text), nil
}

func looksLikeHTMLDocument(text string) bool {
	head := strings.ToLower(strings.TrimLeft(text, " \t\r\n\ufeff"))
	return strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html")
}

// js substitutes in JS source: in every string literal and template segment
// holding a placeholder, decoded, substituted and encoded with its own quote.
// A placeholder anywhere else is left, and file reports it.
func (s *substituter) js(src string) (string, error) {
	var b strings.Builder
	last := 0
	for _, lit := range esm.Literals(src) {
		raw := src[lit.Start:lit.End]
		if !s.contains(raw) {
			continue
		}
		text, err := jsDecode(raw, lit.Quote)
		if err != nil {
			return "", fmt.Errorf("the string at byte %d holds %w", lit.Start, err)
		}
		sub, err := s.inner(text)
		if err != nil {
			return "", fmt.Errorf("in the string at byte %d: %w", lit.Start, err)
		}
		b.WriteString(src[last:lit.Start])
		b.WriteString(jsEncode(sub, lit.Quote))
		last = lit.End
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// json substitutes in a JSON document: every string holding a placeholder
// is decoded, substituted and encoded again.
func (s *substituter) json(src string) (string, error) {
	var b strings.Builder
	last := 0
	for i := 0; i < len(src); i++ {
		if src[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(src) && src[end] != '"' {
			if src[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(src) {
			return "", fmt.Errorf("an unterminated JSON string at byte %d", i)
		}
		raw := src[i : end+1]
		if s.contains(raw) {
			var text string
			if err := json.Unmarshal([]byte(raw), &text); err != nil {
				return "", fmt.Errorf("the JSON string at byte %d: %w", i, err)
			}
			sub, err := s.inner(text)
			if err != nil {
				return "", fmt.Errorf("in the JSON string at byte %d: %w", i, err)
			}
			b.WriteString(src[last:i])
			b.WriteString(`"` + jsonEscape(sub) + `"`)
			last = end + 1
		}
		i = end
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// text substitutes in plain text, such as a React Server Components payload
// (`4:["$","title",null,{"children":"…"}]` rows). A placeholder inside a
// JSON string there (a double-quoted run opened after `:`, `[`, `,`, `{` or
// at the start of a line) gets JSON escapes; elsewhere the value goes in as
// it is, and the enclosing layer escapes it.
func (s *substituter) text(src string) string {
	var b strings.Builder
	inString, jsonString, escaped := false, false, false
	prev := byte('\n') // the last non-space byte outside a string
	last := 0
	at, tok := s.next(src, 0)
	for i := 0; i < len(src) && at >= 0; i++ {
		if i == at {
			val := s.values[tok]
			if inString && jsonString {
				val = jsonEscape(val)
			}
			b.WriteString(src[last:i])
			b.WriteString(val)
			i += len(tok) - 1
			last = i + 1
			escaped = false
			at, tok = s.next(src, last)
			continue
		}
		c := src[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
			prev = c
		case inString:
		case c == '"':
			inString, jsonString = true, strings.IndexByte(":[,{\n", prev) >= 0
		case c != ' ' && c != '\t' && c != '\r':
			prev = c
		}
	}
	b.WriteString(src[last:])
	return b.String()
}

// html substitutes in an HTML document: in a <script> element's text as JS
// (or JSON for a JSON script type), in a tag with attribute escapes, and in
// text and comments with text escapes. A placeholder in a <style> element
// or another raw-text element is left, and file reports it.
func (s *substituter) html(src string) (string, error) {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	rawElement, scriptKind := "", kindJS
	offset := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				return "", fmt.Errorf("reading HTML: %w", z.Err())
			}
			break
		}
		raw := string(z.Raw())
		at := offset
		offset += len(raw)
		switch tt {
		case html.StartTagToken:
			name, _ := z.TagName()
			switch string(name) {
			case "script":
				rawElement, scriptKind = "script", scriptType(z)
			case "style", "xmp", "iframe", "noembed", "noframes", "plaintext":
				rawElement = string(name)
			}
		case html.EndTagToken:
			rawElement = ""
		}
		if !s.contains(raw) {
			b.WriteString(raw)
			continue
		}
		switch {
		case tt == html.TextToken && rawElement == "script" && scriptKind == kindJS:
			sub, err := s.js(raw)
			if err != nil {
				return "", fmt.Errorf("in the <script> at byte %d: %w", at, err)
			}
			b.WriteString(sub)
		case tt == html.TextToken && rawElement == "script" && scriptKind == kindJSON:
			sub, err := s.json(raw)
			if err != nil {
				return "", fmt.Errorf("in the <script> at byte %d: %w", at, err)
			}
			b.WriteString(sub)
		case tt == html.TextToken && rawElement != "":
			b.WriteString(raw) // reported by file
		case tt == html.StartTagToken || tt == html.SelfClosingTagToken || tt == html.EndTagToken:
			b.WriteString(s.replaceAll(raw, htmlAttrEscape))
		default:
			b.WriteString(s.replaceAll(raw, htmlEscape))
		}
	}
	return b.String(), nil
}

// scriptType is the kind of a <script>'s text by its type attribute.
func scriptType(z *html.Tokenizer) string {
	for {
		key, val, more := z.TagAttr()
		if string(key) == "type" {
			t := strings.ToLower(strings.TrimSpace(string(val)))
			switch {
			case t == "" || t == "module" || strings.Contains(t, "javascript"):
				return kindJS
			case strings.HasSuffix(t, "json"):
				return kindJSON
			default:
				return kindUnknown
			}
		}
		if !more {
			return kindJS
		}
	}
}

// replaceAll puts each placeholder's value, escaped, in its place.
func (s *substituter) replaceAll(text string, escape func(string) string) string {
	pairs := make([]string, 0, 2*len(s.tokens))
	for _, t := range s.tokens {
		pairs = append(pairs, t, escape(s.values[t]))
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// replaceSecrets replaces each build key by the installation's; both have
// the same shape (base64 or hex), which no context escapes.
func replaceSecrets(text []byte, from, to Secrets) ([]byte, bool) {
	found := false
	for _, f := range secretFields {
		old, repl := []byte(*f.value(&from)), []byte(*f.value(&to))
		if bytes.Contains(text, old) {
			found = true
			text = bytes.ReplaceAll(text, old, repl)
		}
	}
	return text, found
}
