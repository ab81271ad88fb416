package vercel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v6/plumbing/format/gitignore"
)

// cliDefaultIgnores are what the Vercel CLI never uploads, whatever the
// project says (Vercel's documented "Ignored files and folders"): version
// control, caches, installed packages, virtual environments and, above all,
// a developer's local environment files (.env.local, .env.*.local), which
// hold their own secrets and would otherwise land in the deployment's
// source, readable by anyone with access to the project.
var cliDefaultIgnores = []string{
	".hg", ".git", ".gitmodules", ".svn", ".cache", ".next", ".now", ".vercel",
	".npmignore", ".dockerignore", ".gitignore", ".*.swp", ".DS_Store", ".wafpicke-*", ".lock-wscript",
	".env.local", ".env.*.local", ".venv", ".yarn/cache", "npm-debug.log", "config.gypi",
	"node_modules", "__pycache__", "venv", "CVS",
}

// buildOutputs are this project's additions to the CLI's list: the outputs
// of the web's other builds (OpenNext for Cloudflare, turbo, wrangler),
// which Vercel does not use since it builds the web itself.
var buildOutputs = []string{".open-next", ".turbo", ".wrangler"}

// ignoreFile is the project's own list, read from the root of the source
// as the Vercel CLI reads it from the directory it deploys, in .gitignore's
// syntax.
const ignoreFile = ".vercelignore"

// uploadFilter says which paths of a source tree a deployment leaves out:
// the CLI's defaults, the build outputs and the source's .vercelignore, in
// the order they apply (the last rule that matches a path decides it).
type uploadFilter struct{ rules []ignoreRule }

// ignoreRule is one line of the list. go-git's Pattern.Match answers for a
// path and everything below it at once (a bare name matches any component of
// the path, a glob any path below one it matches), which is how go-git walks
// a tree; git and the Vercel CLI instead decide each directory level on its
// own, and a "!" rule that brings a directory back says nothing about what
// lies below it. So each rule is asked about one level: a bare name about
// that level's name alone, as git matches a pattern without a slash, and a
// glob only when it does not already match the level above (such a match is
// the parent's, decided there).
type ignoreRule struct {
	pattern gitignore.Pattern
	// bareName: the pattern has no slash (a trailing one aside), so git
	// matches it against a path's last component.
	bareName bool
}

// newUploadFilter reads source's .vercelignore, if it has one.
func newUploadFilter(source string) (uploadFilter, error) {
	lines := append(append([]string{}, cliDefaultIgnores...), buildOutputs...)
	raw, err := os.ReadFile(filepath.Join(source, ignoreFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return uploadFilter{}, fmt.Errorf("vercel: reading the source's %s: %w", ignoreFile, err)
	default:
		scanner := bufio.NewScanner(bytes.NewReader(raw))
		for scanner.Scan() {
			line := strings.TrimSuffix(scanner.Text(), "\r")
			// The CLI drops a leading "./", which .gitignore's syntax
			// would otherwise read as part of the name.
			line = strings.TrimPrefix(line, "./")
			if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
	}
	rules := make([]ignoreRule, len(lines))
	for i, line := range lines {
		body := strings.TrimSuffix(strings.TrimRight(strings.TrimPrefix(line, "!"), " "), "/")
		rules[i] = ignoreRule{pattern: gitignore.ParsePattern(line, nil), bareName: !strings.Contains(body, "/")}
	}
	return uploadFilter{rules: rules}, nil
}

// excludes reports whether rel (a slash path relative to the source) is
// left out: itself, or a directory above it, matches. The CLI never
// descends into a directory it ignores, so a later "!" rule cannot bring
// back a file below one.
func (f uploadFilter) excludes(rel string, isDir bool) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		if f.excludesLevel(parts[:i], i < len(parts) || isDir) {
			return true
		}
	}
	return false
}

// excludesLevel decides path's last component, its parents being kept: the
// last rule that matches it at this level says whether it is left out.
func (f uploadFilter) excludesLevel(path []string, isDir bool) bool {
	for i := len(f.rules) - 1; i >= 0; i-- {
		r := f.rules[i]
		var m gitignore.MatchResult
		if r.bareName {
			m = r.pattern.Match(path[len(path)-1:], isDir)
		} else if m = r.pattern.Match(path, isDir); m != gitignore.NoMatch && len(path) > 1 &&
			r.pattern.Match(path[:len(path)-1], true) != gitignore.NoMatch {
			m = gitignore.NoMatch
		}
		if m != gitignore.NoMatch {
			return m == gitignore.Exclude
		}
	}
	return false
}
