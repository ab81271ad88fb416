package installation

import (
	"fmt"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Small helpers every stage uses.

// problems collects the errors of a stage, each naming its input.
type problems []error

// add records a problem with the input at path.
func (p *problems) add(path, format string, args ...any) {
	*p = append(*p, fieldError(path, format, args...))
}

// addIf records problem at path unless it is "".
func (p *problems) addIf(path, problem string) {
	if problem != "" {
		p.add(path, "%s", problem)
	}
}

// keyPath is the path of a map entry, base.key or base["key"] quoted
// (family.KeyPath), so that a key holding a newline, a dot or nothing at all
// still names one field on one line.
func keyPath(base, key string) string { return family.KeyPath(base, key) }

// fieldError is a problem with one input, named by its path.
func fieldError(path, format string, a ...any) error {
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
}

// oneLine escapes the line breaks a problem quotes from its input (a path or
// a name holding a newline), so that each problem stays on its own line.
var oneLine = strings.NewReplacer("\r", `\r`, "\n", `\n`)

// specError reports every problem at once, one per line, saying nothing was
// changed.
func specError(errs []error) error {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = "  " + oneLine.Replace(e.Error())
	}
	return fmt.Errorf("invalid OpenInspect spec (nothing was changed):\n%s", strings.Join(lines, "\n"))
}

func quoteList(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(quoted, ", ")
}
