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
// the CLI's defaults, the build outputs and the source's .vercelignore.
type uploadFilter struct{ matcher gitignore.Matcher }

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
	patterns := make([]gitignore.Pattern, len(lines))
	for i, line := range lines {
		patterns[i] = gitignore.ParsePattern(line, nil)
	}
	return uploadFilter{matcher: gitignore.NewMatcher(patterns)}, nil
}

// excludes reports whether rel (a slash path relative to the source) is
// left out: itself, or a directory above it, matches. The CLI never
// descends into a directory it ignores, so a later "!" rule cannot bring
// back a file below one.
func (f uploadFilter) excludes(rel string, isDir bool) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if f.matcher.Match(parts[:i], true) {
			return true
		}
	}
	return f.matcher.Match(parts, isDir)
}
