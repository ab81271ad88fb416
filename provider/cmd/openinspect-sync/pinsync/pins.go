package pinsync

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Where the sandbox builders pin their toolchains. The Modal and Daytona
// pins are recorded in the contract; the other builders' are compared with
// Modal's and any difference is reported.
const (
	modalImageFile     = "packages/modal-infra/src/images/base.py"
	modalProjectFile   = "packages/modal-infra/pyproject.toml"
	daytonaToolchain   = "packages/daytona-infra/src/toolchain.py"
	daytonaBuildScript = "terraform/modules/daytona-infra/scripts/build-snapshot.sh"
	runtimeManifest    = "packages/sandbox-runtime/src/sandbox_runtime/runtime_manifest.json"
)

// otherBuilders are the builders whose pins the contract does not record.
var otherBuilders = []struct{ name, file string }{
	{"OpenComputer", "packages/opencomputer-infra/src/build-template.ts"},
	{"Vercel", "packages/control-plane/src/sandbox/providers/vercel/bootstrap.ts"},
	{"E2B", "packages/e2b-infra/e2b.Dockerfile"},
}

// constants reads NAME = "value" assignments of a source file: Python
// module constants, TypeScript `const NAME = "value";`, shell NAME="value"
// and Dockerfile `ARG NAME=value`. Only upper-case names are read; the first
// assignment of a name wins.
func constants(src string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		for _, prefix := range []string{"export ", "const ", "readonly ", "ARG "} {
			line = strings.TrimPrefix(line, prefix)
		}
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.TrimLeft(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || strings.HasPrefix(value, "=") {
			continue
		}
		value = strings.TrimSuffix(strings.TrimSpace(value), ";")
		if unq, err := strconv.Unquote(value); err == nil {
			value = unq
		} else if value == "" || strings.Trim(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
			continue // an expression, not a literal (a bare one is a Dockerfile ARG's)
		}
		if _, seen := out[name]; !seen {
			out[name] = value
		}
	}
	return out
}

func (d *deriver) pins(file string, names ...string) map[string]string {
	src, err := d.readFile(file)
	if err != nil {
		d.fail("toolchain pins: %v (the builder moved; teach pins.go where it is now)", err)
		return nil
	}
	all := constants(src)
	for _, n := range names {
		if all[n] == "" {
			d.fail("toolchain pins: %s sets no %s", file, n)
		}
	}
	return all
}

// sandboxPins reads the toolchain versions the Modal and Daytona builders
// bake in, and the runtime version every builder shares.
func (d *deriver) sandboxPins() {
	img := &d.out.Sandbox.Modal.Image
	modal := d.pins(modalImageFile, "OPENCODE_VERSION", "CODE_SERVER_VERSION", "AGENT_BROWSER_VERSION", "TTYD_VERSION")
	if m := modal; m != nil {
		img.OpencodeAI, img.OpencodePlugin = m["OPENCODE_VERSION"], m["OPENCODE_VERSION"] // one pin for the CLI and its plugin
		img.CodeServer, img.AgentBrowser, img.Ttyd = m["CODE_SERVER_VERSION"], m["AGENT_BROWSER_VERSION"], m["TTYD_VERSION"]
		for _, other := range otherBuilders {
			src, err := d.readFile(other.file)
			if err != nil {
				d.notices = append(d.notices, fmt.Sprintf("toolchain: the %s builder (%s) is absent", other.name, other.file))
				continue
			}
			theirs := constants(src)
			for _, n := range []string{"OPENCODE_VERSION", "CODE_SERVER_VERSION", "AGENT_BROWSER_VERSION", "TTYD_VERSION"} {
				if v, ok := theirs[n]; ok && v != m[n] {
					d.notices = append(d.notices, fmt.Sprintf("toolchain: the %s builder pins %s %s, Modal's image %s", other.name, n, v, m[n]))
				}
			}
		}
	}
	if raw, err := d.readFile(runtimeManifest); err != nil {
		// Before the shared manifest, the Modal image's cache buster was the
		// runtime version label.
		if v := modal["CACHE_BUSTER"]; v != "" {
			img.RuntimeVersion = v
		} else {
			d.fail("toolchain pins: %v, and %s sets no CACHE_BUSTER", err, modalImageFile)
		}
	} else {
		var manifest struct {
			RuntimeVersion string `json:"runtimeVersion"`
		}
		if err := json.Unmarshal([]byte(raw), &manifest); err != nil || manifest.RuntimeVersion == "" {
			d.fail("toolchain pins: %s has no runtimeVersion", runtimeManifest)
		}
		img.RuntimeVersion = manifest.RuntimeVersion
	}
	if raw, err := d.readFile(modalProjectFile); err != nil {
		d.fail("toolchain pins: %v", err)
	} else {
		var project struct {
			Project struct {
				Dependencies []string `toml:"dependencies"`
			} `toml:"project"`
		}
		if _, err := toml.Decode(raw, &project); err != nil {
			d.fail("toolchain pins: %s: %v", modalProjectFile, err)
		}
		found := false
		for _, dep := range project.Project.Dependencies {
			for _, op := range []string{"modal>=", "modal=="} {
				if v, ok := strings.CutPrefix(strings.ReplaceAll(dep, " ", ""), op); ok {
					d.out.Sandbox.Modal.ModalClientVersion, found = strings.SplitN(v, ",", 2)[0], true
				}
			}
		}
		if !found {
			d.fail("toolchain pins: %s has no modal>= or modal== dependency", modalProjectFile)
		}
	}
	tc := &d.out.Sandbox.Daytona.Toolchain
	if m := d.pins(daytonaToolchain, "OPENCODE_VERSION", "CODE_SERVER_VERSION", "AGENT_BROWSER_VERSION", "SANDBOX_VERSION"); m != nil {
		tc.OpencodeAI, tc.OpencodePlugin = m["OPENCODE_VERSION"], m["OPENCODE_VERSION"]
		tc.CodeServer, tc.AgentBrowser = m["CODE_SERVER_VERSION"], m["AGENT_BROWSER_VERSION"]
		d.out.Sandbox.Daytona.Snapshot.SandboxVersion = m["SANDBOX_VERSION"]
	}
	if src, err := d.readFile(daytonaBuildScript); err != nil {
		d.fail("toolchain pins: %v", err)
	} else {
		sdk := d.out.Sandbox.Daytona.Snapshot.BuilderSDK.Package + "=="
		_, after, ok := strings.Cut(src, sdk)
		version := strings.FieldsFunc(after, func(r rune) bool { return r == '\'' || r == '"' || r == ' ' || r == '\n' })
		if !ok || len(version) == 0 {
			d.fail("toolchain pins: %s installs no %s<version>", daytonaBuildScript, sdk)
		} else {
			d.out.Sandbox.Daytona.Snapshot.BuilderSDK.Version = version[0]
		}
	}
}

// migrations reads the D1 migration files: their names (count, first, last,
// gaps), which hold triggers or pragmas, and their SHA-256 digests, which
// need no build and are recorded here as the release step records them.
func (d *deriver) migrations() {
	m := &d.out.D1Migrations
	dir := d.tree.path(m.Directory)
	entries, err := os.ReadDir(dir)
	if err != nil {
		d.fail("d1 migrations: %s: %v", m.Directory, err)
		return
	}
	numbers := map[int]string{}
	digests := map[string]string{}
	var triggers, pragmas []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		name := e.Name()
		digits, _, _ := strings.Cut(name, "_")
		n, err := strconv.Atoi(digits)
		if err != nil || len(digits) != m.NumberWidth {
			d.fail("d1 migrations: %s does not start with a %d-digit number and _", name, m.NumberWidth)
			continue
		}
		if other, dup := numbers[n]; dup {
			d.fail("d1 migrations: %s and %s share number %d (upstream's applier refuses to run)", other, name, n)
		}
		numbers[n] = name
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			d.fail("d1 migrations: %v", err)
			continue
		}
		sum := sha256.Sum256(raw)
		digests[name] = hex.EncodeToString(sum[:])
		hasTrigger, hasPragma := sqlFeatures(string(raw))
		if hasTrigger {
			triggers = append(triggers, name)
		}
		if hasPragma {
			pragmas = append(pragmas, name)
		}
	}
	if len(numbers) == 0 {
		d.fail("d1 migrations: %s holds no .sql file", m.Directory)
		return
	}
	keys := make([]int, 0, len(numbers))
	for n := range numbers {
		keys = append(keys, n)
	}
	slices.Sort(keys)
	m.FileCount, m.First, m.Last = len(keys), keys[0], keys[len(keys)-1]
	m.Gaps = []int{}
	for n := m.First; n <= m.Last; n++ {
		if _, ok := numbers[n]; !ok {
			m.Gaps = append(m.Gaps, n)
		}
	}
	slices.Sort(triggers)
	slices.Sort(pragmas)
	m.FilesWithTriggers, m.FilesWithPragmas = nonNil(triggers), nonNil(pragmas)
	d.out.Artefacts.Migrations = digests
}

// sqlFeatures says whether a migration file creates a trigger (whose body
// holds semicolons) or runs a pragma: what an applier must not split on
// semicolons or must run outside a transaction. Line comments are skipped.
func sqlFeatures(sql string) (trigger, pragma bool) {
	var code []string
	for _, line := range strings.Split(sql, "\n") {
		line, _, _ = strings.Cut(line, "--")
		line = strings.ToUpper(strings.TrimSpace(line))
		if strings.HasPrefix(line, "PRAGMA ") {
			pragma = true
		}
		code = append(code, line)
	}
	joined := strings.Join(strings.Fields(strings.Join(code, " ")), " ")
	return strings.Contains(joined, "CREATE TRIGGER ") || strings.Contains(joined, "CREATE TEMP TRIGGER ") || strings.Contains(joined, "CREATE TEMPORARY TRIGGER "), pragma
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// envFields reads the fields of `interface Env { ... }` in a worker
// package's TypeScript sources: name -> optional.
func (d *deriver) envFields(pkg string) (map[string]bool, string) {
	root := d.tree.path(path.Join(pkg, "src"))
	var fields map[string]bool
	var file string
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || fields != nil {
			return fs.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".ts") || strings.HasSuffix(p, ".test.ts") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		if f := interfaceFields(string(raw), "Env"); f != nil {
			fields = f
			file, _ = filepath.Rel(d.tree.root, p)
		}
		return nil
	})
	return fields, filepath.ToSlash(file)
}

// interfaceFields reads the member names of `interface <name> {` (its
// direct members: `NAME: type;` or `NAME?: type;`, comments skipped).
func interfaceFields(src, name string) map[string]bool {
	at := strings.Index(src, "interface "+name+" {")
	if at < 0 {
		return nil
	}
	fields := map[string]bool{}
	depth := 0
	for _, line := range strings.Split(src[at:], "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		trimmed := strings.TrimSpace(line)
		if depth == 1 && !strings.HasPrefix(trimmed, "*") && !strings.HasPrefix(trimmed, "/*") {
			if member, _, ok := strings.Cut(trimmed, ":"); ok {
				optional := strings.HasSuffix(member, "?")
				member = strings.TrimSuffix(member, "?")
				if member != "" && strings.Trim(member, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == "" {
					fields[member] = optional
				}
			}
		}
		depth += strings.Count(line, "{") - strings.Count(line, "}")
		if depth <= 0 && strings.Contains(line, "}") {
			break
		}
	}
	return fields
}

// checkEnvType compares what Terraform binds on a worker with the fields its
// Env type declares: a binding the code does not declare, or a required
// field nothing binds, is reported to the reviewer.
func (d *deriver) checkEnvType(w upstream.Worker) {
	fields, file := d.envFields(w.Package)
	if fields == nil {
		d.notices = append(d.notices, fmt.Sprintf("worker %s: no `interface Env` under %s/src to compare its bindings with", w.Logical, w.Package))
		return
	}
	bound := map[string]bool{}
	for _, n := range bindingNames(w) {
		bound[n] = true
		if _, ok := fields[n]; !ok {
			d.notices = append(d.notices, fmt.Sprintf("worker %s binds %s, which its Env type (%s) does not declare", w.Logical, n, file))
		}
	}
	var missing []string
	for n, optional := range fields {
		if !optional && !bound[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	for _, n := range missing {
		d.notices = append(d.notices, fmt.Sprintf("worker %s: its Env type (%s) requires %s, which nothing binds", w.Logical, file, n))
	}
}

// bindingNames are every name a worker's env carries: bindings, vars and secrets.
func bindingNames(w upstream.Worker) []string {
	var out []string
	for _, x := range w.Bindings.All() {
		out = append(out, x.Binding)
	}
	for _, e := range slices.Concat(w.Vars, w.Secrets) {
		out = append(out, e.Name)
	}
	return out
}
