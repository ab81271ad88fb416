package upstream

import (
	"strings"
)

// Name applies the general pattern.
func (n Naming) Name(prefix, logical, deploymentName string) string {
	return prefix + "-" + logical + "-" + deploymentName
}

// Exception returns the naming exception for a resource kind, if any.
func (n Naming) Exception(kind string) (NamingException, bool) {
	for _, e := range n.Exceptions {
		if e.Kind == kind {
			return e, true
		}
	}
	return NamingException{}, false
}

func (v *validator) naming() {
	n := v.c.Naming
	for _, part := range []string{"<prefix>", "<logical>", "<deploymentName>"} {
		if !strings.Contains(n.Pattern, part) {
			v.add("naming.pattern %q lacks %s", n.Pattern, part)
		}
	}
	if !logicalRE.MatchString(n.DefaultPrefix) {
		v.add("naming.defaultPrefix %q is not a lowercase name", n.DefaultPrefix)
	}
	if _, ok := n.Exception("d1Database"); !ok {
		v.add("naming.exceptions: the d1Database exception is missing")
	}
}
