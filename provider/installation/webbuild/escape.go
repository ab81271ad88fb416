package webbuild

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The encoders below write a decoded text as the raw text of one context.
// Each escapes more than its grammar requires: `<`, `>` and `&` never appear
// raw in JS or JSON strings (so no `</script` or `<!--` can close or change
// an enclosing HTML element), and U+2028/U+2029 are escaped (older JS
// engines end a string at them).

// shortEscapes are the escapes JS and JSON strings share.
var shortEscapes = map[rune]string{'\\': `\\`, '\n': `\n`, '\r': `\r`, '\t': `\t`}

// jsEncode writes s as the contents of a JS string literal delimited by
// quote: a double or single quote, or a backtick for a template segment.
func jsEncode(s string, quote byte) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case shortEscapes[r] != "":
			b.WriteString(shortEscapes[r])
		case r < utf8.RuneSelf && byte(r) == quote:
			b.WriteByte('\\')
			b.WriteByte(quote)
		case r == '$' && quote == '`':
			b.WriteString(`\$`)
		case r < 0x20 || r == 0x7f || r == '<' || r == '>' || r == '&':
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

var errLegacyEscape = errors.New("an octal escape (not allowed in modules), which this substitution does not read")

// jsDecode reads the raw contents of a JS string literal or template
// segment into the text it denotes.
func jsDecode(raw string, quote byte) (string, error) {
	if !strings.Contains(raw, `\`) && (quote != '`' || !strings.Contains(raw, "\r")) {
		return raw, nil
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		c := raw[i]
		if c == '\r' && quote == '`' {
			// A template's raw CR LF or CR is read as LF.
			b.WriteByte('\n')
			i++
			if i < len(raw) && raw[i] == '\n' {
				i++
			}
			continue
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(raw) {
			return "", fmt.Errorf("a lone backslash at the end of a string")
		}
		e := raw[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0':
			if i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
				return "", errLegacyEscape
			}
			b.WriteByte(0)
		case '1', '2', '3', '4', '5', '6', '7', '8', '9':
			return "", errLegacyEscape
		case 'x':
			if i+2 > len(raw) {
				return "", fmt.Errorf("a short \\x escape")
			}
			n, err := strconv.ParseUint(raw[i:i+2], 16, 8)
			if err != nil {
				return "", fmt.Errorf("a bad \\x escape %q", raw[i-2:i+2])
			}
			b.WriteRune(rune(n))
			i += 2
		case 'u':
			r, n, err := unicodeEscape(raw[i:])
			if err != nil {
				return "", err
			}
			i += n
			// A surrogate pair written as two escapes is one character.
			if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(raw[i:], `\u`) {
				if lo, m, err := unicodeEscape(raw[i+2:]); err == nil && lo >= 0xdc00 && lo < 0xe000 {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 2 + m
				}
			}
			if r >= 0xd800 && r < 0xe000 {
				return "", fmt.Errorf("a lone surrogate escape, which UTF-8 cannot hold")
			}
			b.WriteRune(r)
		case '\n':
			// a line continuation
		case '\r':
			if i < len(raw) && raw[i] == '\n' {
				i++
			}
		default:
			r, size := utf8.DecodeRuneInString(raw[i-1:])
			i += size - 1
			if r != '\u2028' && r != '\u2029' { // line continuations too
				b.WriteRune(r)
			}
		}
	}
	return b.String(), nil
}

// unicodeEscape reads what follows `\u`: four hex digits or {hex}.
func unicodeEscape(s string) (rune, int, error) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 2 {
			return 0, 0, fmt.Errorf("a bad \\u{} escape")
		}
		n, err := strconv.ParseUint(s[1:end], 16, 32)
		if err != nil || n > utf8.MaxRune {
			return 0, 0, fmt.Errorf("a bad \\u{} escape")
		}
		return rune(n), end + 1, nil
	}
	if len(s) < 4 {
		return 0, 0, fmt.Errorf("a short \\u escape")
	}
	n, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return 0, 0, fmt.Errorf("a bad \\u escape %q", s[:4])
	}
	return rune(n), 4, nil
}

// jsonEscape writes s as the contents of a JSON string (without quotes).
func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case shortEscapes[r] != "":
			b.WriteString(shortEscapes[r])
		case r < 0x20 || r == 0x7f || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// htmlEscape writes s as HTML text (also right in a quoted attribute value,
// a comment and an RCDATA element such as <title>).
var htmlEscape = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;",
).Replace

// htmlAttrEscape writes s inside a tag: also right in an unquoted attribute
// value, where whitespace, `=` and a backtick would end or confuse it.
var htmlAttrEscape = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;",
	"`", "&#96;", "=", "&#61;", " ", "&#32;", "\t", "&#9;", "\n", "&#10;", "\f", "&#12;", "\r", "&#13;",
).Replace
