package pinsync

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// deriver builds the contract of one upstream tree. The contract's own
// sections (naming, derived values, the sandbox backends' protocol facts,
// the migration ledger, the artefacts' build recipe) and the words for
// facts that already exist (descriptions, purposes, notes) come from the
// current contract; every fact the tree states is read from it.
type deriver struct {
	tree      *tree
	env       *tfDir
	current   *currentContract
	decisions *Decisions
	out       *upstream.Contract

	generated      []upstream.Generated
	usedConditions map[string]bool
	undecidedFacts []Undecided
	problems       []string
	// deletedClasses are Durable Object classes a worker's deleted_classes
	// names at this commit, by worker: reported, not recorded (the provider
	// emits the deleted_classes step itself when a class leaves the contract).
	deletedClasses map[string][]string
	// notices are facts for the reviewer that the contract does not hold.
	notices []string

	// workerModuleDir is terraform/modules/cloudflare-worker, parsed;
	// mainModule is the module name it uploads a bundle under.
	workerModuleDir *tfDir
	mainModule      string
	compat          *upstream.Compatibility
	compatFrom      string
	// localKey is the outermost local whose body source() is translating:
	// the expressions key to suggest when the body cannot be translated.
	localKey string
}

func (d *deriver) fail(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// currentContract is the contract the pin moves from, with lookups.
type currentContract struct{ *upstream.Contract }

func (c *currentContract) generatedByResource(resource string) *upstream.Generated {
	for i := range c.Generated {
		if c.Generated[i].UpstreamResource == resource {
			return &c.Generated[i]
		}
	}
	return nil
}

func clone(c *upstream.Contract) *upstream.Contract {
	raw, err := json.Marshal(c)
	if err != nil {
		panic(err) // a decoded contract always marshals
	}
	out, err := upstream.Parse(raw)
	if err != nil {
		panic(err)
	}
	return out
}

// derive reads the tree into a new contract.
func derive(t *tree, current *upstream.Contract, decisions *Decisions) (*upstream.Contract, *deriver, error) {
	env, err := parseDir(t.path(productionDir))
	if err != nil {
		return nil, nil, err
	}
	d := &deriver{
		tree: t, env: env, current: &currentContract{current}, decisions: decisions,
		out: clone(current), usedConditions: map[string]bool{}, deletedClasses: map[string][]string{},
	}
	d.out.Upstream.Commit, d.out.Upstream.CommitDate = t.commit, t.commitDate
	if err := d.readWorkerModule(); err != nil {
		return nil, nil, err
	}
	for name, c := range decisions.Conditions {
		if _, exists := d.out.Conditions[name]; exists {
			continue // decided earlier and already recorded: the contract's words stand
		}
		d.out.Conditions[name] = upstream.Condition{Description: c.Description, Test: c.Test}
	}
	d.inputs()
	d.out.D1Databases = d.d1Databases()
	d.out.KVNamespaces = d.kvNamespaces()
	d.out.R2Buckets = d.r2Buckets()
	consumers := d.queueConsumers()
	d.out.Queues = d.queues(consumers)
	d.out.Workers = d.workers(consumers)
	d.compatibility()
	d.out.Generated = keepOrder(d.generated, current.Generated, func(g upstream.Generated) string { return g.UpstreamResource })
	d.conditionDefaultsAndPrune()
	d.sandboxPins()
	d.migrations()
	d.bundles()
	if len(d.problems) > 0 {
		return nil, d, fmt.Errorf("reading upstream at %s:\n  %s", t.commit, strings.Join(d.problems, "\n  "))
	}
	if len(d.undecidedFacts) > 0 {
		return nil, d, &UndecidedError{Facts: d.undecidedFacts}
	}
	if err := d.out.ValidateFor(t.commit); err != nil {
		return nil, d, fmt.Errorf("the derived contract is inconsistent: %w", err)
	}
	return d.out, d, nil
}

// readWorkerModule parses the module the workers are deployed with (the
// source of the first module call that passes worker_name and script_path).
func (d *deriver) readWorkerModule() error {
	for _, b := range d.env.each("module", "") {
		if !moduleSource(b, "cloudflare-worker") {
			continue
		}
		src, _ := literalString(attr(b, "source"))
		dir := filepath.Join(d.env.dir, filepath.FromSlash(src))
		m, err := parseDir(dir)
		if err != nil {
			return fmt.Errorf("the worker module %s: %w", src, err)
		}
		d.workerModuleDir = m
		version := m.resource("cloudflare_worker_version", "this")
		if version == nil {
			return fmt.Errorf("the worker module %s has no cloudflare_worker_version.this", src)
		}
		main, ok := literalString(attr(version, "main_module"))
		if !ok {
			return fmt.Errorf("the worker module %s: cloudflare_worker_version.this main_module is not a string", src)
		}
		d.mainModule = main
		return nil
	}
	return fmt.Errorf("%w: %s calls no cloudflare-worker module", ErrNotUpstream, productionDir)
}

// inputs keeps every input whose upstream variable still exists, with its
// type, default and secrecy as upstream now declares them, and adds the
// decided new ones.
func (d *deriver) inputs() {
	var out []upstream.Input
	for _, in := range d.out.Inputs {
		v := d.env.variables[in.UpstreamVariable]
		if v == nil {
			continue // gone upstream: the report names it
		}
		d.applyVariable(&in, v)
		out = append(out, in)
	}
	names := make([]string, 0, len(d.decisions.Inputs))
	for name := range d.decisions.Inputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if slices.ContainsFunc(out, func(in upstream.Input) bool { return in.UpstreamVariable == name }) {
			continue
		}
		v := d.env.variables[name]
		if v == nil {
			d.fail("decisions: inputs.%s: %s declares no such variable", name, productionDir)
			continue
		}
		dec := d.decisions.Inputs[name]
		in := upstream.Input{Name: dec.Name, UpstreamVariable: name, Description: dec.Description}
		d.applyVariable(&in, v)
		out = append(out, in)
	}
	d.out.Inputs = out
}

func (d *deriver) applyVariable(in *upstream.Input, v *hclsyntax.Block) {
	typ, def, sensitive := variableFacts(v)
	switch typ {
	case "string", "bool", "number":
	default:
		d.fail("variable %s: type %s is not string, bool or number, which inputs are", in.UpstreamVariable, typ)
	}
	in.Type, in.Default, in.Required = typ, def, def == nil
	// The contract may keep a value secret that upstream does not mark
	// sensitive (never the other way round).
	in.Secret = in.Secret || sensitive
}

// logical reads a resource name template "<prefix>-<logical>-${local.name_suffix}".
func (d *deriver) logical(e hclsyntax.Expression, usedBy string) (string, bool) {
	parts, ok := templateParts(e)
	prefix := d.out.Naming.DefaultPrefix + "-"
	if ok && len(parts) == 2 && parts[1] == "${local.name_suffix}" && strings.HasPrefix(parts[0], prefix) && strings.HasSuffix(parts[0], "-") {
		if name := strings.TrimSuffix(strings.TrimPrefix(parts[0], prefix), "-"); name != "" {
			return name, true
		}
	}
	d.fail("%s: name %q is not \"%s<logical>-${local.name_suffix}\"", usedBy, d.env.text(e), prefix)
	return "", false
}

func find[T any](list []T, match func(T) bool) *T {
	for i := range list {
		if match(list[i]) {
			return &list[i]
		}
	}
	return nil
}

// compatibility writes the workers' shared settings and what the worker
// module gives every worker (workers.dev, observability).
func (d *deriver) compatibility() {
	if d.compat == nil {
		d.fail("%s calls no cloudflare-worker module", productionDir)
		return
	}
	c := &d.out.Compatibility
	c.Date, c.Flags = d.compat.Date, d.compat.Flags
	script := d.workerModuleDir.resource("cloudflare_worker", "this")
	if script == nil {
		d.fail("%s: no resource cloudflare_worker.this", d.workerModuleDir.dir)
		return
	}
	if sub, ok := object(attr(script, "subdomain")); ok {
		if v, ok := constant(sub["enabled"]); ok && !v.IsNull() {
			c.WorkersDev = v.True()
		}
	}
	obs, ok := constant(attr(script, "observability"))
	if !ok {
		c.Observability = nil
		return
	}
	raw, err := ctyjson.Marshal(obs, obs.Type())
	if err != nil {
		d.fail("cloudflare_worker.this observability: %v", err)
		return
	}
	var o struct {
		Enabled          bool    `json:"enabled"`
		HeadSamplingRate float64 `json:"head_sampling_rate"`
		Logs             struct {
			Enabled          bool    `json:"enabled"`
			HeadSamplingRate float64 `json:"head_sampling_rate"`
			InvocationLogs   bool    `json:"invocation_logs"`
		} `json:"logs"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		d.fail("cloudflare_worker.this observability: %v", err)
		return
	}
	c.Observability = &upstream.Observability{Enabled: o.Enabled, HeadSamplingRate: o.HeadSamplingRate,
		Logs: upstream.ObservabilityLogs{Enabled: o.Logs.Enabled, HeadSamplingRate: o.Logs.HeadSamplingRate, InvocationLogs: o.Logs.InvocationLogs}}
}

// conditionDefaultsAndPrune computes each condition's default from the
// inputs' and derived values' defaults, and drops conditions nothing uses
// any more (the sandbox providers' conditions are always kept: the
// sandboxProvider value names them).
func (d *deriver) conditionDefaultsAndPrune() {
	used := map[string]bool{}
	var mark func(name string)
	mark = func(name string) {
		if used[name] {
			return
		}
		used[name] = true
		for _, of := range d.out.Conditions[name].Test.Of {
			mark(of)
		}
	}
	for name := range d.usedConditions {
		mark(name)
	}
	mark("always") // the contract's two built-in conditions
	mark("set")
	walkWhens(d.out, mark)
	if sp := d.out.DerivedValue("sandboxProvider"); sp != nil {
		for _, p := range sp.Allowed {
			mark(p)
		}
	}
	defaults := d.out.Defaults()
	for name, c := range d.out.Conditions {
		if !used[name] {
			delete(d.out.Conditions, name)
			continue
		}
		if c.Test.Op == upstream.OpSet || usesSet(d.out, name) {
			c.Default = nil
		} else if holds, err := d.out.Holds(name, defaults, ""); err == nil {
			c.Default = &holds
		} else {
			d.fail("condition %s: %v", name, err)
		}
		d.out.Conditions[name] = c
	}
}

func usesSet(c *upstream.Contract, name string) bool {
	cond, ok := c.Conditions[name]
	if !ok {
		return false
	}
	if cond.Test.Op == upstream.OpSet {
		return true
	}
	return slices.ContainsFunc(cond.Test.Of, func(of string) bool { return usesSet(c, of) })
}

// walkWhens calls mark with every condition a `when` names.
func walkWhens(c *upstream.Contract, mark func(string)) {
	for _, x := range c.D1Databases {
		mark(x.When)
	}
	for _, x := range c.KVNamespaces {
		mark(x.When)
	}
	for _, x := range c.R2Buckets {
		mark(x.When)
	}
	for _, x := range c.Queues {
		mark(x.When)
	}
	opt := func(w string) {
		if w != "" {
			mark(w)
		}
	}
	for _, w := range c.Workers {
		mark(w.When)
		for _, e := range slices.Concat(w.Vars, w.Secrets) {
			mark(e.When)
		}
		for _, x := range w.Bindings.All() {
			opt(x.When)
		}
	}
}

// bundles keeps the recorded reference bundles of the workers that remain
// (a bundle's digest needs a build: the release step's -record writes it),
// and takes a new worker's from the decisions file.
func (d *deriver) bundles() {
	out := map[string]upstream.BundleDigest{}
	for _, w := range d.out.Workers {
		if b, ok := d.current.Artefacts.Bundles[w.Logical]; ok {
			out[w.Logical] = b
		} else if b, ok := d.decisions.Bundles[w.Logical]; ok {
			out[w.Logical] = b
		} else {
			d.undecided(fmt.Sprintf("worker %s is new and has no reference bundle digest", w.Logical),
				fmt.Sprintf(`"bundles": {%q: {"sha256": "<hex>", "bytes": <n>}}: the SHA-256 and size of %s built at this commit (npm run build in %s); the release step's -record then re-records every bundle`, w.Logical, w.Bundle, w.Package))
		}
	}
	d.out.Artefacts.Bundles = out
}

var errNoFile = errors.New("missing")

func (d *deriver) readFile(rel string) (string, error) {
	raw, err := d.tree.read(rel)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.ToSlash(rel), errNoFile)
	}
	return string(raw), nil
}
