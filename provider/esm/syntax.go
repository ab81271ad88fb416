package esm

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/evanw/esbuild/pkg/api"
)

// SyntaxError is where a module stops parsing as an ES module, and why, in
// words that never quote the module's own text (a Worker's content may be a
// secret): only the quoted punctuation of the parser's message is kept.
type SyntaxError struct {
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in characters
	Reason string `json:"reason"`
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Reason)
}

// parsed remembers the modules that parsed, by content digest, so the
// component's check of a planned Worker and the Worker's own Check parse a
// bundle once per plugin process, not once each.
var parsed sync.Map

// parseOne serialises the parses: a bundle's syntax tree is many times the
// bundle, and the plugin checks several Workers at once.
var parseOne sync.Mutex

// CheckSyntax parses src as an ES module with esbuild's parser (the parser
// wrangler bundles with), without running or resolving anything, and
// returns the first syntax error, or nil. A module Cloudflare would refuse
// at upload (code 10021, "Uncaught SyntaxError") is refused here first.
func CheckSyntax(src []byte) *SyntaxError {
	key := sha256.Sum256(src)
	if _, ok := parsed.Load(key); ok {
		return nil
	}
	parseOne.Lock()
	out := parseIn(src)
	parseOne.Unlock()
	if out == nil {
		parsed.Store(key, struct{}{})
	}
	return out
}

// Vouch records src as a module that parses, without parsing it: for a
// bundle the caller verified to be upstream's own build at the pin (by its
// digest), which a parse of several seconds and hundreds of MB would only
// confirm.
func Vouch(src []byte) { parsed.Store(sha256.Sum256(src), struct{}{}) }

// parseHere parses src in this process.
func parseHere(src []byte) *SyntaxError {
	result := api.Transform(string(src), api.TransformOptions{
		Loader:   api.LoaderJS,
		Format:   api.FormatESModule,
		Target:   api.ESNext,
		LogLevel: api.LogLevelSilent,
		// Keep the output small: only the parse matters.
		MinifyWhitespace: true,
	})
	if len(result.Errors) == 0 {
		return nil
	}
	first := result.Errors[0]
	out := &SyntaxError{Reason: withoutSourceText(first.Text)}
	if loc := first.Location; loc != nil {
		out.Line = loc.Line
		out.Column = columnOf(loc.LineText, loc.Column) + 1
	}
	return out
}

// columnOf turns esbuild's byte offset into the line into a character count.
func columnOf(line string, bytes int) int {
	if bytes > len(line) {
		bytes = len(line)
	}
	return len([]rune(line[:bytes]))
}

// withoutSourceText keeps the parser's sentence but replaces each quoted
// fragment holding a letter or a digit with "…": those are the module's own
// tokens ("Expected \";\" but found \"sk_live\""), and the module may be a
// secret. Quoted punctuation (";", "=>", ")") tells what was expected.
func withoutSourceText(text string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(text, '"')
		if open < 0 {
			b.WriteString(text)
			return b.String()
		}
		end := strings.IndexByte(text[open+1:], '"')
		if end < 0 {
			b.WriteString(text)
			return b.String()
		}
		quoted := text[open+1 : open+1+end]
		b.WriteString(text[:open])
		if strings.IndexFunc(quoted, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			b.WriteString("…")
		} else {
			b.WriteString(`"` + quoted + `"`)
		}
		text = text[open+1+end+1:]
	}
}
