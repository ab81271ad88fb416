// Package esm reads ES modules without running them: the names a module
// exports, the structural check Cloudflare makes when a Worker is uploaded
// (a Durable Object class must be exported by the main module), and whether
// it parses at all (CheckSyntax, with esbuild's parser), made here at
// preview.
//
// The package depends only on esbuild's parser and sits outside internal/,
// so the emulator refuses uploads by the same rules the provider checks at
// preview.
package esm

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Exports are what a module's top-level export statements declare.
type Exports struct {
	// Names are the exported bindings, "default" included.
	Names map[string]bool
	// StarFrom are the specifiers of `export * from "…"` statements: their
	// names are exported too, but only the named module knows them.
	StarFrom []string
}

// Has reports whether name is exported by the module itself.
func (e Exports) Has(name string) bool { return e.Names[name] }

// Scan lists the exports of an ES module's source. It skips comments,
// strings, template literals and regular expressions, and reads `export`
// only at the top level (brace depth 0), so a bundle's nested code and
// string contents never count.
func Scan(src string) Exports {
	out := Exports{Names: map[string]bool{}}
	l := lexer{src: src}
	for {
		tok := l.next()
		if tok.kind == tokEOF {
			return out
		}
		if tok.kind == tokIdent && tok.text == "export" && l.depth == 0 {
			l.readExport(&out)
		}
	}
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokString
	tokPunct
	tokOther // numbers, regular expressions, templates
)

type token struct {
	kind tokKind
	text string
}

type lexer struct {
	src   string
	pos   int
	depth int
	// prev is the last significant token, which decides whether a slash
	// starts a regular expression or divides.
	prev token
	// templates holds, for each open `${` of a template literal, the brace
	// depth at which its closing brace resumes the template.
	templates []int
	// literal, when set, is told where each string literal's or template
	// segment's raw text lies (Literals).
	literal func(Literal)
}

// Literal is where a string literal's contents, or one text segment of a
// template literal, lie in a module's source: Start and End are byte
// offsets of the raw text between the delimiters, escapes kept.
type Literal struct {
	// Quote is '"', '\'' or '`' (a template segment).
	Quote      byte
	Start, End int
}

// Literals reports every string literal and template segment of src, in
// order, skipping comments and regular expressions by the same rules as Scan.
func Literals(src string) []Literal {
	var out []Literal
	l := lexer{src: src, literal: func(lit Literal) { out = append(out, lit) }}
	for l.next().kind != tokEOF {
	}
	return out
}

// next returns the next significant token, tracking brace depth.
func (l *lexer) next() token {
	tok := l.scan()
	if tok.kind != tokEOF {
		l.prev = tok
	}
	return tok
}

func (l *lexer) scan() token {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "//"):
			l.skipTo("\n")
		case strings.HasPrefix(l.src[l.pos:], "/*"):
			l.pos += 2
			l.skipTo("*/")
			l.pos += 2
		case c == '"' || c == '\'':
			return token{tokString, l.quoted(c)}
		case c == '`':
			l.pos++
			l.template()
			return token{kind: tokOther}
		case c == '/':
			if l.regexAllowed() {
				l.regex()
				return token{kind: tokOther}
			}
			l.pos++
			return token{tokPunct, "/"}
		case c == '{':
			l.pos++
			l.depth++
			return token{tokPunct, "{"}
		case c == '}':
			l.pos++
			if n := len(l.templates); n > 0 && l.templates[n-1] == l.depth {
				// The end of a template substitution: the template goes on.
				l.templates = l.templates[:n-1]
				l.template()
				return token{kind: tokOther}
			}
			if l.depth > 0 {
				l.depth--
			}
			return token{tokPunct, "}"}
		case isIdentStart(l.src[l.pos:]):
			start := l.pos
			for l.pos < len(l.src) && isIdentPart(l.src[l.pos:]) {
				_, size := utf8.DecodeRuneInString(l.src[l.pos:])
				l.pos += size
			}
			return token{tokIdent, l.src[start:l.pos]}
		case c >= '0' && c <= '9':
			for l.pos < len(l.src) && (isIdentPart(l.src[l.pos:]) || l.src[l.pos] == '.') {
				l.pos++
			}
			return token{kind: tokOther}
		default:
			l.pos++
			return token{tokPunct, string(c)}
		}
	}
	return token{kind: tokEOF}
}

func (l *lexer) skipTo(end string) {
	if i := strings.Index(l.src[l.pos:], end); i >= 0 {
		l.pos += i
	} else {
		l.pos = len(l.src)
	}
}

// quoted reads a string literal and returns its contents (escapes kept:
// module specifiers and export names never need them).
func (l *lexer) quoted(q byte) string {
	l.pos++
	start := l.pos
	for l.pos < len(l.src) && l.src[l.pos] != q && l.src[l.pos] != '\n' {
		if l.src[l.pos] == '\\' {
			l.pos++
		}
		l.pos++
	}
	text := l.src[start:min(l.pos, len(l.src))]
	if l.literal != nil {
		l.literal(Literal{Quote: q, Start: start, End: min(l.pos, len(l.src))})
	}
	l.pos++
	return text
}

// template reads a template literal up to its end or to a `${`, whose
// closing brace (at the current depth) resumes it.
func (l *lexer) template() {
	start := l.pos
	segment := func() {
		if l.literal != nil {
			l.literal(Literal{Quote: '`', Start: start, End: min(l.pos, len(l.src))})
		}
	}
	for l.pos < len(l.src) {
		switch {
		case l.src[l.pos] == '\\':
			l.pos += 2
		case l.src[l.pos] == '`':
			segment()
			l.pos++
			return
		case strings.HasPrefix(l.src[l.pos:], "${"):
			segment()
			l.pos += 2
			l.templates = append(l.templates, l.depth)
			return
		default:
			l.pos++
		}
	}
}

// regexAllowed is the usual heuristic: a slash after a value (a name, a
// literal, a closing bracket) divides; anywhere else it starts a regular
// expression. Keywords that precede an expression count as operators.
func (l *lexer) regexAllowed() bool {
	switch l.prev.kind {
	case tokEOF:
		return true
	case tokIdent:
		switch l.prev.text {
		case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else", "yield", "await":
			return true
		}
		return false
	case tokString, tokOther:
		return false
	}
	return l.prev.text != ")" && l.prev.text != "]" && l.prev.text != "}"
}

func (l *lexer) regex() {
	l.pos++
	inClass := false
	for l.pos < len(l.src) && l.src[l.pos] != '\n' {
		c := l.src[l.pos]
		l.pos++
		switch {
		case c == '\\':
			l.pos++
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case c == '/' && !inClass:
			for l.pos < len(l.src) && isIdentPart(l.src[l.pos:]) {
				l.pos++ // flags
			}
			return
		}
	}
}

// readExport reads what follows a top-level `export`.
func (l *lexer) readExport(out *Exports) {
	tok := l.next()
	switch {
	case tok.kind == tokIdent && tok.text == "default":
		out.Names["default"] = true
	case tok.kind == tokIdent && (tok.text == "class" || tok.text == "function"):
		if name := l.declName(); name != "" {
			out.Names[name] = true
		}
	case tok.kind == tokIdent && tok.text == "async":
		if l.next().text == "function" {
			if name := l.declName(); name != "" {
				out.Names[name] = true
			}
		}
	case tok.kind == tokIdent && (tok.text == "const" || tok.text == "let" || tok.text == "var"):
		// `export const a = 1, b = 2`: each declarator's name (destructuring
		// patterns are not read: bundles never export that way).
		for {
			name := l.next()
			if name.kind != tokIdent {
				return
			}
			out.Names[name.text] = true
			if !l.skipInitializer() {
				return
			}
		}
	case tok.kind == tokPunct && tok.text == "*":
		next := l.next()
		if next.kind == tokIdent && next.text == "as" {
			if name := l.next(); name.kind == tokIdent || name.kind == tokString {
				out.Names[name.text] = true
			}
			return
		}
		if next.kind == tokIdent && next.text == "from" {
			if spec := l.next(); spec.kind == tokString {
				out.StarFrom = append(out.StarFrom, spec.text)
			}
		}
	case tok.kind == tokPunct && tok.text == "{":
		l.exportList(out)
	}
}

// declName reads a declaration's name, skipping a generator's star.
func (l *lexer) declName() string {
	tok := l.next()
	if tok.kind == tokPunct && tok.text == "*" {
		tok = l.next()
	}
	if tok.kind == tokIdent {
		return tok.text
	}
	return ""
}

// exportList reads `{ a, b as c, "d" as e }` after its opening brace; the
// exported name is the one after `as`, if any.
func (l *lexer) exportList(out *Exports) {
	target := l.depth - 1
	var last string
	for {
		tok := l.next()
		switch {
		case tok.kind == tokEOF:
			return
		case tok.kind == tokPunct && tok.text == "}" && l.depth == target:
			if last != "" {
				out.Names[last] = true
			}
			return
		case tok.kind == tokPunct && tok.text == ",":
			if last != "" {
				out.Names[last] = true
			}
			last = ""
		case tok.kind == tokIdent && tok.text == "as":
			// the next name replaces the local one
		case tok.kind == tokIdent || tok.kind == tokString:
			last = tok.text
		}
	}
}

// skipInitializer skips `= expression` up to the declarator's comma (true:
// another declarator follows) or the statement's end (false).
func (l *lexer) skipInitializer() bool {
	depth := l.depth
	parens := 0
	for {
		start := l.pos
		tok := l.next()
		switch {
		case tok.kind == tokEOF:
			return false
		case tok.kind == tokPunct && (tok.text == "(" || tok.text == "["):
			parens++
		case tok.kind == tokPunct && (tok.text == ")" || tok.text == "]"):
			parens--
		case l.depth != depth || parens > 0:
		case tok.kind == tokPunct && tok.text == ",":
			return true
		case tok.kind == tokPunct && tok.text == ";":
			return false
		case tok.kind == tokIdent && tok.text == "export":
			// A new statement without a semicolon: read it as one.
			l.pos, l.prev = start, token{}
			return false
		}
	}
}

func isIdentStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || r == '$' || unicode.IsLetter(r)
}

func isIdentPart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Graph is the exports of the module named main in a set of modules (a
// Worker upload's parts, named by path), following `export * from` into the
// others. known is false when a star export names a module source does not
// have: its names cannot be known, so a caller must not refuse anything.
func Graph(main string, source func(name string) ([]byte, bool)) (names map[string]bool, known bool) {
	names = map[string]bool{}
	seen := map[string]bool{}
	var visit func(name string) bool
	visit = func(name string) bool {
		if seen[name] {
			return true
		}
		seen[name] = true
		src, ok := source(name)
		if !ok {
			return false
		}
		ex := Scan(string(src))
		for n := range ex.Names {
			names[n] = true
		}
		for _, spec := range ex.StarFrom {
			if !visit(resolve(name, spec)) {
				return false
			}
		}
		return true
	}
	return names, visit(main)
}

// resolve resolves a relative specifier against the importing module's
// name, as module names in an upload are paths.
func resolve(from, spec string) string {
	if !strings.HasPrefix(spec, "./") && !strings.HasPrefix(spec, "../") {
		return spec
	}
	return strings.TrimPrefix(path.Join(path.Dir(from), spec), "./")
}
