package family

import (
	"strconv"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
)

// The engine prints a check failure that names a property as
// `property <path> value {<rendered input>} has a problem: <reason>`, where
// the rendered input is inputs[<path>] looked up as one top-level key: a
// nested path ("observability.headSamplingRate") renders as {<nil>}, a
// top-level map as {map[...]} with every entry in it. A failure with no
// property is printed as `has a problem: <reason>` alone, so Readable moves
// the field path into the reason: the person reads the field and the
// problem, never a Go value.

// Readable is failures as the engine should print them: each failure that
// names a property becomes one with no property whose reason starts with the
// field path ("name: ..."). Checks build failures with Property set (so that
// KnownFailures can tell which field a failure is about) and the provider
// passes every Check's answer through Readable once, at the edge.
func Readable(failures []p.CheckFailure) []p.CheckFailure {
	if len(failures) == 0 {
		return failures
	}
	out := make([]p.CheckFailure, 0, len(failures))
	for _, f := range failures {
		if f.Property != "" {
			f = p.CheckFailure{Reason: f.Property + ": " + f.Reason}
		}
		out = append(out, f)
	}
	return out
}

// FailureField is the field path a failure names: its Property, or for a
// Readable failure the path its reason starts with ("" when it names none).
func FailureField(f p.CheckFailure) string {
	if f.Property != "" {
		return f.Property
	}
	path, _ := SplitReason(f.Reason)
	return path
}

// SplitReason splits a Readable reason into its field path and the problem.
// A quoted key may hold ": " (`vars["a: b"]`), so quoted segments are skipped
// whole (a plain key may hold a space: a Modal env key). A reason that does
// not start with a path and ": " is returned as the problem.
func SplitReason(reason string) (path, problem string) {
	for i := 0; i < len(reason); {
		switch {
		case strings.HasPrefix(reason[i:], `["`):
			q, err := strconv.QuotedPrefix(reason[i+1:])
			if err != nil {
				return "", reason
			}
			i += 1 + len(q)
		case strings.HasPrefix(reason[i:], ": "):
			if _, ok := parsePath(reason[:i]); !ok {
				return "", reason
			}
			return reason[:i], reason[i+2:]
		default:
			i++
		}
	}
	return "", reason
}

// FailureProblem is what a failure says is wrong, without the field path a
// Readable failure's reason starts with.
func FailureProblem(f p.CheckFailure) string {
	if f.Property != "" {
		return f.Reason
	}
	_, problem := SplitReason(f.Reason)
	return problem
}

// ProblemsByField are failures' problems keyed by the field each names
// (FailureField); of two failures naming one field, the later one's.
func ProblemsByField(failures []p.CheckFailure) map[string]string {
	out := make(map[string]string, len(failures))
	for _, f := range failures {
		out[FailureField(f)] = FailureProblem(f)
	}
	return out
}
