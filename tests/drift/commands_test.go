package drift

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The project's commands whose flags the docs may show, by the main
// package that defines them.
var projectCommands = map[string]string{
	"openinspect-emulator":        "tests/emulator/cmd/openinspect-emulator",
	"openinspect-release":         "provider/cmd/openinspect-release",
	"openinspect-sync":            "provider/cmd/openinspect-sync",
	"openinspect-gen":             "provider/cmd/openinspect-gen",
	"pulumi-resource-openinspect": "provider/cmd/pulumi-resource-openinspect",
}

// flagDefinition matches the flag package's definitions, fs.String("out",
// and flag.StringVar(&o.Source, "source", alike.
var flagDefinition = regexp.MustCompile(`\b\w+\.(?:String|Bool|Int|Int64|Uint|Float64|Duration|Func|Var|StringVar|BoolVar|IntVar|Int64Var|DurationVar|TextVar)\((?:[^,()]+, )?"([\w-]+)"`)

var (
	fencedBlock = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	inlineCode  = regexp.MustCompile("`([^`\n]+)`")
	// commandBreak ends one command of a shell line.
	commandBreak = regexp.MustCompile(`&&|\|\||[|;]|\$\(|\)`)
	makeTarget   = regexp.MustCompile(`^\s*(?:\$\s*)?(?:[A-Z_]+=\S+\s+)*make\s+(?:-\S+\s+)*([a-z][\w-]*)`)
	dashFlag     = regexp.MustCompile(`^--?([a-z][\w-]*)(?:=.*)?$`)
)

// TestDocsShowOnlyRealCommands: every `make <target>` a Markdown file of
// the repository shows in code is a target of the Makefile, and every flag
// it passes to one of the project's commands is defined by that command.
// Every tracked .md file is read, not only docs/ and the README: a README
// beside the code (provider/internal/artefacts/dist's) once told users to
// run the plugin with a flag it does not have.
func TestDocsShowOnlyRealCommands(t *testing.T) {
	root := repoRoot(t)
	targets := makeTargets(t, root)
	flags := map[string]map[string]bool{}
	for cmd, dir := range projectCommands {
		flags[cmd] = definedFlags(t, filepath.Join(root, filepath.FromSlash(dir)))
	}
	docs := trackedFiles(t, root, "*.md")
	require.Contains(t, docs, "provider/internal/artefacts/dist/README.md", "every Markdown file is listed, not only docs/")
	checked := 0
	for _, doc := range docs {
		raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(doc)))
		require.NoError(t, err)
		for _, problem := range commandProblems(string(raw), targets, flags, &checked) {
			t.Errorf("%s: %s", doc, problem)
		}
	}
	assert.Greater(t, checked, 10, "the docs' commands were found")
}

// TestCommandProblemsAreFound: the checker reports an undefined flag, an
// unknown make target, and passes what exists.
func TestCommandProblemsAreFound(t *testing.T) {
	targets := map[string]bool{"demo": true, "test": true}
	flags := map[string]map[string]bool{"pulumi-resource-openinspect": {}, "openinspect-emulator": {"listen": true, "data-dir": true}}
	doc := "Run `make demo`, then `make tests`.\n\n```sh\nbin/openinspect-emulator -listen :0 -data-dir /tmp/x && make test\n" +
		"pulumi-resource-openinspect -artefacts\n```\nTo make two builds agree (prose, not a command).\n"
	checked := 0
	problems := commandProblems(doc, targets, flags, &checked)
	assert.ElementsMatch(t, []string{
		`make tests: the Makefile has no target "tests"`,
		`pulumi-resource-openinspect -artefacts: the command defines no flag "artefacts"`,
	}, problems)
	assert.Equal(t, 6, checked)
}

// commandProblems checks the commands in a Markdown text's code; checked
// counts the targets and flags looked at.
func commandProblems(doc string, targets map[string]bool, flags map[string]map[string]bool, checked *int) []string {
	var code []string
	for _, m := range fencedBlock.FindAllStringSubmatch(doc, -1) {
		code = append(code, strings.Split(m[1], "\n")...)
	}
	for _, m := range inlineCode.FindAllStringSubmatch(fencedBlock.ReplaceAllString(doc, ""), -1) {
		code = append(code, m[1])
	}
	var problems []string
	for _, line := range code {
		for _, command := range commandBreak.Split(line, -1) {
			if m := makeTarget.FindStringSubmatch(command); m != nil {
				*checked++
				if !targets[m[1]] {
					problems = append(problems, "make "+m[1]+": the Makefile has no target "+quote(m[1]))
				}
				continue
			}
			problems = append(problems, flagProblems(command, flags, checked)...)
		}
	}
	sort.Strings(problems)
	return problems
}

// flagProblems checks the flags a command passes to one of the project's
// commands (named by path or name: bin/openinspect-emulator, go run
// ./provider/cmd/openinspect-release).
func flagProblems(command string, flags map[string]map[string]bool, checked *int) []string {
	words := strings.Fields(command)
	for i, w := range words {
		name := filepath.Base(strings.TrimSuffix(w, "/"))
		defined, ok := flags[name]
		if !ok {
			continue
		}
		var problems []string
		for _, arg := range words[i+1:] {
			if strings.HasPrefix(arg, "#") {
				break
			}
			m := dashFlag.FindStringSubmatch(arg)
			if m == nil {
				continue
			}
			*checked++
			if !defined[m[1]] && m[1] != "h" && m[1] != "help" {
				problems = append(problems, name+" "+arg+": the command defines no flag "+quote(m[1]))
			}
		}
		return problems
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }

// definedFlags are the flags a main package's Go files define.
func definedFlags(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "%s holds the command", dir)
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range flagDefinition.FindAllStringSubmatch(string(raw), -1) {
			out[m[1]] = true
		}
	}
	return out
}

// makeTargets are the Makefile's rule names.
func makeTargets(t *testing.T, root string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][\w-]*)\s*:[^=]`).FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	require.Contains(t, out, "test")
	return out
}
