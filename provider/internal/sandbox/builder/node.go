package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// NodeEnv is a ready Node.js environment: a directory whose node_modules
// holds a builder's pinned packages, where its bundled script is written so
// that Node resolves the packages the bundle leaves external.
type NodeEnv struct {
	Dir  string
	Node string
	// Reused is true when it came from the cache and nothing was installed.
	Reused bool
}

// Bin is the path of an installed package's executable.
func (e NodeEnv) Bin(name string) string {
	return filepath.Join(e.Dir, "node_modules", ".bin", name)
}

// Env is what a step running in the environment adds to BaseEnv: its
// executables first on PATH, and its packages on NODE_PATH, where esbuild
// and Node look for a bare import that no node_modules above the importing
// file provides (a checkout that was never installed).
func (e NodeEnv) Env() []string {
	return []string{
		"PATH=" + filepath.Join(e.Dir, "node_modules", ".bin") + string(os.PathListSeparator) +
			filepath.Dir(e.Node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"NODE_PATH=" + filepath.Join(e.Dir, "node_modules"),
	}
}

// exactPin is name@version with an exact version: a range would make the
// cache key stand for whatever the registry served that day.
var exactPin = regexp.MustCompile(`^(@[a-z0-9._-]+/)?[a-z0-9._-]+@[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

// NodeEnvironment returns a Node.js environment with exactly pins
// (name@version each) installed, building it when the cache has none. It
// is keyed by the Node and npm versions and the pins; like Environment it
// is built in a private directory renamed into place, and nothing is
// written into the builder's checkout. Install scripts do not run (as
// upstream installs its builders' dependencies).
func (r *Runner) NodeEnvironment(ctx context.Context, node string, pins []string) (NodeEnv, error) {
	if r.CacheDir == "" {
		return NodeEnv{}, fmt.Errorf("%s: the builder runner needs CacheDir", r.label())
	}
	deps := map[string]string{}
	for _, pin := range pins {
		if !exactPin.MatchString(pin) {
			return NodeEnv{}, fmt.Errorf("%s: %q is not a package pinned to an exact version (name@1.2.3)", r.label(), pin)
		}
		at := strings.LastIndex(pin, "@")
		deps[pin[:at]] = pin[at+1:]
	}
	if node == "" {
		found, err := exec.LookPath("node")
		if err != nil {
			return NodeEnv{}, fmt.Errorf("%s: Node.js is needed to run the builder and is not on PATH", r.label())
		}
		node = found
	}
	npm := filepath.Join(filepath.Dir(node), "npm")
	if _, err := os.Stat(npm); err != nil {
		found, lerr := exec.LookPath("npm")
		if lerr != nil {
			return NodeEnv{}, fmt.Errorf("%s: npm is needed beside %s to install the builder's packages", r.label(), node)
		}
		npm = found
	}
	nodeVersion, err := toolVersion(ctx, node)
	if err != nil {
		return NodeEnv{}, fmt.Errorf("%s: running %s: %w", r.label(), node, err)
	}
	npmVersion, err := toolVersion(ctx, npm)
	if err != nil {
		return NodeEnv{}, fmt.Errorf("%s: running %s: %w", r.label(), npm, err)
	}
	sorted := slices.Sorted(slices.Values(pins))
	key := envKey(append([]string{"node " + nodeVersion, "npm " + npmVersion}, sorted...)...)
	final, tmp, reused, err := r.cacheSlot("node", key, "Node.js")
	if err != nil {
		return NodeEnv{}, err
	} else if reused {
		return NodeEnv{Dir: final, Node: node, Reused: true}, nil
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	manifest, err := json.MarshalIndent(map[string]any{
		"name": "openinspect-builder-env", "private": true, "version": "0.0.0", "dependencies": deps,
	}, "", "  ")
	if err != nil {
		return NodeEnv{}, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return NodeEnv{}, fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), manifest, 0o644); err != nil {
		return NodeEnv{}, fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	r.progress(fmt.Sprintf("installing %s with npm %s (Node %s)", strings.Join(sorted, " "), npmVersion, nodeVersion))
	env := NodeEnv{Dir: tmp, Node: node}
	if err := r.Run(ctx, Step{Name: "npm install", Dir: tmp, Env: append(env.Env(), "npm_config_cache="+filepath.Join(r.CacheDir, "npm-cache")),
		Args: []string{npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock", "--loglevel=error"}}); err != nil {
		return NodeEnv{}, err
	}
	if err := r.checkInstalled("npm", deps, func(name string) (string, error) { return installedVersion(tmp, name) }); err != nil {
		return NodeEnv{}, err
	}
	if err := r.publish(tmp, final, key); err != nil {
		return NodeEnv{}, err
	}
	return NodeEnv{Dir: final, Node: node}, nil
}

// installedVersion reads an installed package's version from its own
// package.json (a package with an exports map need not export it).
func installedVersion(dir, name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return "", fmt.Errorf("%s/package.json: %w", name, err)
	}
	return pkg.Version, nil
}

func toolVersion(ctx context.Context, tool string) (string, error) {
	out, err := exec.CommandContext(ctx, tool, "--version").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
}

// EsbuildScript is a package.json script that runs esbuild, as upstream's
// builders are bundled ("esbuild src/x.ts --bundle ... --outfile=dist/x.js").
type EsbuildScript struct {
	Entry string
	Flags []string
}

// ReadEsbuildScript reads the named script of the package.json in dir and
// parses it as one esbuild invocation of plain arguments (no shell syntax).
func ReadEsbuildScript(dir, script string) (EsbuildScript, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return EsbuildScript{}, fmt.Errorf("builder: %w", err)
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return EsbuildScript{}, fmt.Errorf("builder: %s: %w", filepath.Join(dir, "package.json"), err)
	}
	cmd, ok := pkg.Scripts[script]
	if !ok {
		return EsbuildScript{}, fmt.Errorf("builder: %s has no %q script", filepath.Join(dir, "package.json"), script)
	}
	if strings.ContainsAny(cmd, "&|;<>$`'\"\\") {
		return EsbuildScript{}, fmt.Errorf("builder: the %q script %q is more than one esbuild command", script, cmd)
	}
	fields := strings.Fields(cmd)
	if len(fields) < 2 || fields[0] != "esbuild" {
		return EsbuildScript{}, fmt.Errorf("builder: the %q script %q does not run esbuild", script, cmd)
	}
	var out EsbuildScript
	for _, f := range fields[1:] {
		switch {
		case strings.HasPrefix(f, "--outfile="), strings.HasPrefix(f, "--outdir="):
			// The caller chooses where the bundle goes.
		case strings.HasPrefix(f, "-"):
			out.Flags = append(out.Flags, f)
		case out.Entry == "":
			out.Entry = f
		default:
			return EsbuildScript{}, fmt.Errorf("builder: the %q script %q bundles more than one entry point", script, cmd)
		}
	}
	if out.Entry == "" {
		return EsbuildScript{}, fmt.Errorf("builder: the %q script %q names no entry point", script, cmd)
	}
	return out, nil
}

// Bundle runs the script's esbuild from the environment on the builder's
// directory, writing the bundle to outfile.
func (r *Runner) Bundle(ctx context.Context, env NodeEnv, dir string, s EsbuildScript, outfile string) error {
	args := append([]string{env.Bin("esbuild"), s.Entry}, s.Flags...)
	args = append(args, "--outfile="+outfile, "--log-level=warning")
	return r.Run(ctx, Step{Name: "esbuild " + s.Entry, Dir: dir, Env: env.Env(), Args: args})
}

// NodeBuilder is a builder written in TypeScript, bundled by a package.json
// script of its own and run with Node, as upstream runs its OpenComputer
// and Vercel builders.
type NodeBuilder struct {
	// Name says what runs in progress lines and errors.
	Name string
	// Dir is the builder's package (holding package.json).
	Dir string
	// Script is the package.json script that bundles it ("build").
	Script string
	// Root is the working directory the bundle runs in (upstream runs its
	// builders from the checkout root).
	Root string
	// Env is the builder's own variables.
	Env []string
	// Args follow the bundle on Node's command line.
	Args []string
}

// RunNodeBuilder bundles b with its script's esbuild flags into env (where
// the packages the bundle leaves external resolve; the checkout may be
// read-only), runs the bundle with its log streamed as progress, and
// removes it.
func (r *Runner) RunNodeBuilder(ctx context.Context, env NodeEnv, b NodeBuilder) error {
	script, err := ReadEsbuildScript(b.Dir, b.Script)
	if err != nil {
		return err
	}
	bundles := filepath.Join(env.Dir, "bundles")
	if err := os.MkdirAll(bundles, 0o755); err != nil {
		return fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	// .mjs: the bundle is an ES module, and the environment's package.json
	// declares no module type.
	outfile := filepath.Join(bundles, "builder-"+randomSuffix()+".mjs")
	defer os.Remove(outfile)
	r.progress("bundling " + script.Entry + " (npm run " + b.Script + "'s esbuild)")
	if err := r.Bundle(ctx, env, b.Dir, script, outfile); err != nil {
		return err
	}
	return r.Run(ctx, Step{Name: b.Name, Dir: b.Root, Stream: true,
		Env: append(env.Env(), b.Env...), Args: append([]string{env.Node, outfile}, b.Args...)})
}
