package cloudflare

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Cloudflare reads a Worker's _headers and _redirects files when it serves
// the assets and drops every rule it cannot read, silently as far as the
// API is concerned (wrangler prints them). The provider says so at preview
// instead, as warnings: the upload still works, the rule just never
// applies. The forms are Cloudflare's documented ones (Workers static
// assets, "Headers" and "Redirects"): a _headers rule is a URL pattern on
// its own line, then indented "Name: value" lines (or "! Name" to remove a
// header); a _redirects rule is "source destination [status]" on one line;
// "#" starts a comment line in both.

// redirectStatuses are the statuses a _redirects rule may give (200
// proxies a path to another path on the same site).
var redirectStatuses = map[int]bool{200: true, 301: true, 302: true, 303: true, 307: true, 308: true}

// headersProblems are the _headers lines Cloudflare ignores, each as "line
// N: why".
func headersProblems(text string) []string {
	var problems []string
	inRule := false
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimRight(raw, " \t\r")
		n := i + 1
		switch trimmed := strings.TrimSpace(line); {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			continue
		case line[0] != ' ' && line[0] != '\t':
			inRule = false
			if !strings.HasPrefix(trimmed, "/") && !strings.HasPrefix(trimmed, "https://") {
				problems = append(problems, fmt.Sprintf("line %d: %q is not a URL pattern (start it with / or https://); "+
					"header lines below a pattern are indented", n, clip(trimmed)))
				continue
			}
			inRule = true
		case !inRule:
			problems = append(problems, fmt.Sprintf("line %d: a header with no URL pattern above it", n))
		case strings.HasPrefix(trimmed, "!"):
			if strings.TrimSpace(trimmed[1:]) == "" {
				problems = append(problems, fmt.Sprintf("line %d: \"!\" names no header to remove", n))
			}
		default:
			name, _, ok := strings.Cut(trimmed, ":")
			if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
				problems = append(problems, fmt.Sprintf("line %d: %q is not a header (write Name: value)", n, clip(trimmed)))
			}
		}
	}
	return problems
}

// redirectsProblems are the _redirects lines Cloudflare ignores.
func redirectsProblems(text string) []string {
	var problems []string
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(raw)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields := strings.Fields(trimmed)
		switch {
		case len(fields) < 2 || len(fields) > 3:
			problems = append(problems, fmt.Sprintf("line %d: %q is not a rule (write: source destination [status])", n, clip(trimmed)))
		case !strings.HasPrefix(fields[0], "/"):
			problems = append(problems, fmt.Sprintf("line %d: the source %q is not a path (start it with /)", n, clip(fields[0])))
		case !strings.HasPrefix(fields[1], "/") && !strings.HasPrefix(fields[1], "http://") && !strings.HasPrefix(fields[1], "https://"):
			problems = append(problems, fmt.Sprintf("line %d: the destination %q is neither a path nor a URL", n, clip(fields[1])))
		case len(fields) == 3:
			status, err := strconv.Atoi(fields[2])
			if err != nil || !redirectStatuses[status] {
				problems = append(problems, fmt.Sprintf("line %d: %q is not a redirect status (200, 301, 302, 303, 307 or 308)", n, clip(fields[2])))
			} else if status == 200 && !strings.HasPrefix(fields[1], "/") {
				problems = append(problems, fmt.Sprintf("line %d: a 200 rule proxies to a path on the same site, not to %q", n, clip(fields[1])))
			}
		}
	}
	return problems
}

// clip keeps a quoted line short in a warning.
func clip(s string) string {
	const most = 60
	if r := []rune(s); len(r) > most {
		return string(r[:most]) + "…"
	}
	return s
}

// assetRuleWarnings are the warnings for the rules of the Worker's
// _headers and _redirects files that Cloudflare would ignore; none when
// the assets cannot be read (Check refuses that already).
func (a WorkerArgs) assetRuleWarnings() []string {
	if a.Assets == nil {
		return nil
	}
	set, err := a.Assets.read()
	if err != nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name     string
		problems []string
	}{{headersFile, headersProblems(set.headers)}, {redirectsFile, redirectsProblems(set.redirects)}} {
		for _, problem := range f.problems {
			out = append(out, fmt.Sprintf("worker %s: assets %s %s: Cloudflare ignores this rule", a.Name, f.name, problem))
		}
	}
	return out
}

// assetPathWarnings are the warnings for asset paths that resolve outside
// wd, the program's directory (the engine starts the plugin there): such a
// path publishes whatever it points at, world-readable, which is rarely
// meant (a `../..` too many, a stray absolute path). A warning, not a
// refusal: a site built elsewhere on purpose is legitimate. Paths under
// cache, the provider's own cache directory, are not warned about: the
// OpenInspect component renders the web's assets there itself.
func (a WorkerArgs) assetPathWarnings(wd, cache string) []string {
	if a.Assets == nil || wd == "" {
		return nil
	}
	root := resolvedPath(wd)
	within := func(dir, resolved string) bool {
		rel, err := filepath.Rel(dir, resolved)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	outside := func(local string) (string, bool) {
		if !filepath.IsAbs(local) {
			local = filepath.Join(wd, local)
		}
		resolved := resolvedPath(local)
		if cache != "" && within(resolvedPath(cache), resolved) {
			return resolved, false
		}
		return resolved, !within(root, resolved)
	}
	var out []string
	warn := func(field, local, resolved string) {
		out = append(out, fmt.Sprintf("worker %s: %s %s (%s) resolves outside the program's directory %s: "+
			"everything it names is published as a public asset; keep the built site inside the project, or check the path",
			a.Name, field, local, resolved, wd))
	}
	if d := a.Assets.Directory; d != "" {
		if resolved, out := outside(d); out {
			warn("assets.directory", d, resolved)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(a.Assets.Files)) {
		if resolved, out := outside(a.Assets.Files[key]); out {
			warn(family.KeyPath("assets.files", key), a.Assets.Files[key], resolved)
		}
	}
	return out
}

// resolvedPath is path made absolute with its symbolic links followed, as
// far as they exist.
func resolvedPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}
