package cloudflare

import "strings"

// sqlStatement is one statement of a SQL text and the line it starts on.
type sqlStatement struct {
	text string
	line int
}

// sqlStatements splits SQL text into its statements the way SQLite reads
// them, only to measure them against D1's per-statement limit: files are
// always sent whole. A ';' ends a statement unless it is inside a string,
// a quoted name or a comment, or inside the body of CREATE [TEMP] TRIGGER,
// which only "END;" ends (the rule of SQLite's sqlite3_complete, which
// shares its one blind spot: a CASE ... END; inside a trigger body ends the
// statement early, which can only make a piece shorter).
func sqlStatements(sql string) []sqlStatement {
	var out []sqlStatement
	start, line, startLine := 0, 1, 1
	var words []string // the statement's first three words, upper case
	lastWord := ""
	flush := func(end int) {
		raw := sql[start:end]
		if text := strings.TrimSpace(raw); text != "" {
			lead := raw[:len(raw)-len(strings.TrimLeft(raw, " \t\r\n"))]
			out = append(out, sqlStatement{text: text, line: startLine + strings.Count(lead, "\n")})
		}
		start, startLine, words, lastWord = end, line, nil, ""
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := i + 1
			for j < len(sql) {
				if sql[j] == '\n' {
					line++
				}
				if sql[j] == closer {
					// A doubled quote is an escaped one, not the end.
					if closer != ']' && j+1 < len(sql) && sql[j+1] == closer {
						j += 2
						continue
					}
					break
				}
				j++
			}
			i = j + 1
			lastWord = ""
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				i = len(sql)
			} else {
				i += j // the newline is counted by its own case
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			end := len(sql)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			line += strings.Count(sql[i:end], "\n")
			i = end
		case c == ';':
			i++
			if isTrigger(words) && lastWord != "END" {
				lastWord = ""
				continue
			}
			flush(i)
		case isWordByte(c):
			j := i
			for j < len(sql) && isWordByte(sql[j]) {
				j++
			}
			lastWord = strings.ToUpper(sql[i:j])
			if len(words) < 3 {
				words = append(words, lastWord)
			}
			i = j
		default:
			if c != ' ' && c != '\t' && c != '\r' {
				lastWord = ""
			}
			i++
		}
	}
	flush(len(sql))
	return out
}

// isTrigger: a statement starting CREATE [TEMP|TEMPORARY] TRIGGER.
func isTrigger(words []string) bool {
	if len(words) < 2 || words[0] != "CREATE" {
		return false
	}
	if words[1] == "TRIGGER" {
		return true
	}
	return len(words) == 3 && (words[1] == "TEMP" || words[1] == "TEMPORARY") && words[2] == "TRIGGER"
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}
