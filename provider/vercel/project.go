package vercel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
)

// VercelProject is a Vercel project with its build settings, its
// environment variables and an optional domain.
type VercelProject struct{}

// VercelProjectToken is the resource's type token.
const VercelProjectToken = "openinspect:index:VercelProject"

// VercelProjectArgs are the inputs.
type VercelProjectArgs struct {
	Name           string            `pulumi:"name" provider:"replaceOnChanges"`
	TeamID         string            `pulumi:"teamId,optional" provider:"replaceOnChanges"`
	APIURL         string            `pulumi:"apiUrl,optional"`
	Token          string            `pulumi:"token" provider:"secret"`
	Framework      string            `pulumi:"framework,optional"`
	RootDirectory  string            `pulumi:"rootDirectory,optional"`
	InstallCommand string            `pulumi:"installCommand,optional"`
	BuildCommand   string            `pulumi:"buildCommand,optional"`
	Variables      map[string]string `pulumi:"variables,optional"`
	Sensitive      map[string]string `pulumi:"sensitiveVariables,optional" provider:"secret"`
	Targets        []string          `pulumi:"targets,optional"`
	Domain         string            `pulumi:"domain,optional"`
	AdoptExisting  bool              `pulumi:"adoptExisting,optional"`
}

// VercelProjectState is what the provider records.
type VercelProjectState struct {
	VercelProjectArgs
	ProjectID string `pulumi:"projectId"`
	// VariableIDs are the variables' Vercel IDs by key: a changed value is
	// updated in place by ID, never deleted and created again.
	VariableIDs map[string]string `pulumi:"variableIds"`
	// SensitiveRevision counts the changes of sensitive values, so that
	// VariablesDigest moves with them without being computed from them.
	SensitiveRevision int    `pulumi:"sensitiveRevision"`
	VariablesDigest   string `pulumi:"variablesDigest"`
	Adopted           bool   `pulumi:"adopted"`
	// DomainAttached: the domain is on the project (a create that failed
	// before attaching it leaves it for the next up).
	DomainAttached bool `pulumi:"domainAttached"`
}

var (
	_ infer.CustomCheck[VercelProjectArgs]                      = (*VercelProject)(nil)
	_ infer.CustomDiff[VercelProjectArgs, VercelProjectState]   = (*VercelProject)(nil)
	_ infer.CustomUpdate[VercelProjectArgs, VercelProjectState] = (*VercelProject)(nil)
	_ infer.CustomRead[VercelProjectArgs, VercelProjectState]   = (*VercelProject)(nil)
	_ infer.CustomDelete[VercelProjectState]                    = (*VercelProject)(nil)
)

// Annotate documents the resource.
func (r *VercelProject) Annotate(a infer.Annotator) {
	a.Describe(r, "A Vercel project, created by name in the team, with its build settings (framework, root directory, "+
		"install and build commands), its environment variables (plain and sensitive, for the given targets) and an "+
		"optional domain. A project that already exists with the name is refused unless adoptExisting, or unless it "+
		"holds no variable and no deployment (what a create that did not finish leaves), which is taken over with a warning. A changed "+
		"variable is updated in place by its ID (no delete and create, so no ENV_CONFLICT race); the preview names each "+
		"variable that changes, never a sensitive value. Refresh reads every setting and variable back (a sensitive "+
		"value cannot be read, only its presence, type and targets). Delete removes the project with its variables and "+
		"deployments. Import with `pulumi import openinspect:index:VercelProject <name> <teamId>/<projectId>`, the "+
		"token in VERCEL_TOKEN (and, for another API, its URL in VERCEL_API_URL).")
}

// Annotate documents the inputs.
func (a *VercelProjectArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Name, "The project's name, unique in the team: lower-case letters, digits, '.', '_' and '-', at most 100.")
	an.Describe(&a.TeamID, "The team the project belongs to (team_...); empty for a personal account.")
	an.Describe(&a.APIURL, "Vercel's REST API (default https://api.vercel.com).")
	an.Describe(&a.Token, "A Vercel access token with access to the team.")
	an.Describe(&a.Framework, "The framework preset, e.g. nextjs.")
	an.Describe(&a.RootDirectory, "The directory of the app inside the uploaded source, e.g. packages/web.")
	an.Describe(&a.InstallCommand, "The install command, run in the root directory.")
	an.Describe(&a.BuildCommand, "The build command, run in the root directory.")
	an.Describe(&a.Variables, "Plain environment variables (type plain), by key.")
	an.Describe(&a.Sensitive, "Sensitive environment variables (type sensitive: write-only, never read back), by key.")
	an.Describe(&a.Targets, "The environments every variable applies to (default production and preview, as upstream's).")
	an.Describe(&a.Domain, "A domain to attach to the project (its DNS is yours to point at Vercel).")
	an.Describe(&a.AdoptExisting, "Take over a project that already exists with this name instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *VercelProjectState) Annotate(a infer.Annotator) {
	a.Describe(&s.ProjectID, "The project's ID (prj_...).")
	a.Describe(&s.VariableIDs, "Each variable's Vercel ID, by key.")
	a.Describe(&s.SensitiveRevision, "How many times a sensitive value changed; part of variablesDigest instead of the values.")
	a.Describe(&s.VariablesDigest, "A digest of the variables (plain values, sensitive keys and sensitiveRevision, never a "+
		"sensitive value): a VercelDeployment given it deploys again when it moves.")
	a.Describe(&s.Adopted, "Whether the project existed and was adopted rather than created.")
	a.Describe(&s.DomainAttached, "Whether the domain is attached to the project.")
}

var (
	projectNamePattern = regexp.MustCompile(`^[a-z0-9._-]{1,100}$`)
	envKeyPattern      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	teamIDPattern      = regexp.MustCompile(`^team_[A-Za-z0-9]+$`)
	// validTargets are Vercel's standard environments.
	validTargets = []string{"production", "preview", "development"}
)

// ProjectNameProblem says what is wrong with a project name, or "".
func ProjectNameProblem(name string) string {
	if !projectNamePattern.MatchString(name) || strings.Contains(name, "---") {
		return fmt.Sprintf("%q is not a Vercel project name: at most 100 lower-case letters, digits, '.', '_' or '-', without '---'", name)
	}
	return ""
}

// TeamIDProblem says what is wrong with a team ID, or "".
func TeamIDProblem(id string) string {
	if id != "" && !teamIDPattern.MatchString(id) {
		return fmt.Sprintf("%q is not a Vercel team ID (team_ followed by letters and digits)", id)
	}
	return ""
}

func (a *VercelProjectArgs) targets() []string {
	if len(a.Targets) == 0 {
		return slices.Clone(vercelapi.Targets)
	}
	return slices.Clone(a.Targets)
}

// Check validates the inputs before any remote call.
func (*VercelProject) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[VercelProjectArgs], error) {
	args, failures, err := infer.DefaultCheck[VercelProjectArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[VercelProjectArgs]{Inputs: args, Failures: failures}, err
	}
	add := func(prop, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: prop, Reason: fmt.Sprintf(format, a...)})
	}
	if problem := ProjectNameProblem(args.Name); problem != "" {
		add("name", "%s", problem)
	}
	if problem := TeamIDProblem(args.TeamID); problem != "" {
		add("teamId", "%s", problem)
	}
	if args.APIURL != "" {
		if err := vercelapi.CheckAPIURL(args.APIURL); err != nil {
			add("apiUrl", "%v", err)
		}
	}
	for k := range args.Variables {
		if !envKeyPattern.MatchString(k) {
			add(family.KeyPath("variables", k), "%q is not an environment variable name (letters, digits and _, not starting with a digit)", k)
		}
		if _, both := args.Sensitive[k]; both {
			add(family.KeyPath("variables", k), "also a sensitive variable: give each key once")
		}
	}
	for k := range args.Sensitive {
		if !envKeyPattern.MatchString(k) {
			add(family.KeyPath("sensitiveVariables", k), "%q is not an environment variable name", k)
		}
	}
	for i, t := range args.Targets {
		if !slices.Contains(validTargets, t) {
			add(fmt.Sprintf("targets[%d]", i), "%q is not production, preview or development", t)
		}
		if t == "development" && len(args.Sensitive) > 0 {
			add(fmt.Sprintf("targets[%d]", i), "a sensitive variable cannot target development on Vercel")
		}
	}
	return infer.CheckResponse[VercelProjectArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

func (a *VercelProjectArgs) settings() vercelapi.ProjectSettings {
	return vercelapi.ProjectSettings{Framework: a.Framework, RootDirectory: a.RootDirectory,
		InstallCommand: a.InstallCommand, BuildCommand: a.BuildCommand}
}

func (a *VercelProjectArgs) client() (*vercelapi.Client, error) {
	return vercelapi.New(a.APIURL, a.Token, a.TeamID)
}

// variablesDigest digests the plain values, the sensitive keys and the
// sensitive revision: never a sensitive value.
func variablesDigest(a VercelProjectArgs, revision int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(a.Variables)) {
		fmt.Fprintf(&b, "plain\x00%s\x00%s\n", k, a.Variables[k])
	}
	for _, k := range slices.Sorted(maps.Keys(a.Sensitive)) {
		fmt.Fprintf(&b, "sensitive\x00%s\n", k)
	}
	fmt.Fprintf(&b, "revision\x00%d\ntargets\x00%s\n", revision, strings.Join(a.targets(), ","))
	return family.SHA256HexString(b.String())
}

// wanted are the variables as Vercel should hold them, by key.
func (a *VercelProjectArgs) wanted() map[string]vercelapi.Env {
	out := map[string]vercelapi.Env{}
	for k, v := range a.Variables {
		out[k] = vercelapi.Env{Key: k, Value: v, Type: "plain", Target: a.targets()}
	}
	for k, v := range a.Sensitive {
		out[k] = vercelapi.Env{Key: k, Value: v, Type: "sensitive", Target: a.targets()}
	}
	return out
}

// Create creates the project (or adopts it), its variables and its domain.
// A failure after the project exists leaves it in state, so the next up
// finishes the variables instead of meeting a conflict.
func (*VercelProject) Create(ctx context.Context, req infer.CreateRequest[VercelProjectArgs]) (infer.CreateResponse[VercelProjectState], error) {
	in := req.Inputs
	state := VercelProjectState{VercelProjectArgs: in, VariableIDs: map[string]string{}}
	state.VariablesDigest = variablesDigest(in, 0)
	if req.DryRun {
		return infer.CreateResponse[VercelProjectState]{Output: state}, nil
	}
	cl, err := in.client()
	if err != nil {
		return infer.CreateResponse[VercelProjectState]{}, err
	}
	proj, err := cl.CreateProject(ctx, in.Name, in.settings())
	if errors.Is(err, vercelapi.ErrConflict) {
		proj, err = claim(ctx, cl, in)
		state.Adopted = err == nil
	}
	if err != nil {
		return infer.CreateResponse[VercelProjectState]{}, err
	}
	state.ProjectID = proj.ID
	if err := syncVariables(ctx, cl, &state, nil); err != nil {
		return infer.CreateResponse[VercelProjectState]{ID: proj.ID, Output: state}, initFailed(err)
	}
	if in.Domain != "" {
		if err := cl.AddDomain(ctx, proj.ID, in.Domain); err != nil {
			return infer.CreateResponse[VercelProjectState]{ID: proj.ID, Output: state}, initFailed(err)
		}
		state.DomainAttached = true
	}
	return infer.CreateResponse[VercelProjectState]{ID: proj.ID, Output: state}, nil
}

// claim takes over the existing project of that name: with adoptExisting,
// or when it holds nothing anyone could lose (no variable, no deployment),
// which is what a create killed before its state was written leaves.
// Anything else is a conflict naming the project.
func claim(ctx context.Context, cl *vercelapi.Client, in VercelProjectArgs) (*vercelapi.Project, error) {
	proj, err := cl.GetProject(ctx, in.Name)
	if err != nil {
		return nil, fmt.Errorf("vercel: a project named %q exists in team %q but cannot be read: %w", in.Name, in.TeamID, err)
	}
	if !in.AdoptExisting {
		envs, err := cl.ListEnv(ctx, proj.ID)
		if err != nil {
			return nil, err
		}
		if len(envs) > 0 || len(proj.LatestDeployments) > 0 {
			return nil, fmt.Errorf("vercel: a project named %q already exists in team %q (%s, with %d variables and %d deployments): "+
				"set adoptExisting to take it over, or import it", in.Name, in.TeamID, proj.ID, len(envs), len(proj.LatestDeployments))
		}
		p.GetLogger(ctx).Warningf("vercel: taking over the empty project %s (%s): no variable and no deployment, as a create "+
			"that did not finish leaves it", in.Name, proj.ID)
	}
	return cl.UpdateProject(ctx, proj.ID, in.settings())
}

func initFailed(err error) error {
	return fmt.Errorf("%w: %w", infer.ResourceInitFailedError{Reasons: []string{err.Error()}}, err)
}

// syncVariables makes the project's variables what state's inputs want:
// created when missing (a conflict, a variable made outside or by a run
// that died, is read back and updated in place), updated in place by ID
// when old (the previous inputs, nil at create) differs, removed when no
// longer wanted.
func syncVariables(ctx context.Context, cl *vercelapi.Client, state *VercelProjectState, old map[string]vercelapi.Env) error {
	want := state.wanted()
	ids := state.VariableIDs
	for _, k := range slices.Sorted(maps.Keys(want)) {
		e := want[k]
		id, known := ids[k]
		if known {
			if prev, ok := old[k]; ok && prev.Value == e.Value && prev.Type == e.Type && slices.Equal(prev.Target, e.Target) {
				continue
			}
			err := cl.UpdateEnv(ctx, state.ProjectID, id, e)
			if !errors.Is(err, vercelapi.ErrNotFound) {
				if err != nil {
					return fmt.Errorf("vercel: updating variable %s: %w", k, err)
				}
				continue
			}
			delete(ids, k) // deleted outside: create it again
		}
		id, err := cl.CreateEnv(ctx, state.ProjectID, e)
		if vercelapi.IsEnvConflict(err) {
			id, err = adoptVariable(ctx, cl, state.ProjectID, e)
		}
		if err != nil {
			return fmt.Errorf("vercel: creating variable %s: %w", k, err)
		}
		ids[k] = id
	}
	for _, k := range slices.Sorted(maps.Keys(ids)) {
		if _, ok := want[k]; ok {
			continue
		}
		if err := cl.DeleteEnv(ctx, state.ProjectID, ids[k]); err != nil {
			return fmt.Errorf("vercel: removing variable %s: %w", k, err)
		}
		delete(ids, k)
	}
	return nil
}

// adoptVariable updates in place the variable of that key a conflict
// reported (made by a run that died before recording it, or by hand).
func adoptVariable(ctx context.Context, cl *vercelapi.Client, project string, e vercelapi.Env) (string, error) {
	envs, err := cl.ListEnv(ctx, project)
	if err != nil {
		return "", err
	}
	for _, x := range envs {
		if x.Key == e.Key {
			return x.ID, cl.UpdateEnv(ctx, project, x.ID, e)
		}
	}
	return "", fmt.Errorf("vercel: variable %s conflicts with one that cannot be found", e.Key)
}

// Diff names each setting and variable that moves; a new name or team
// replaces the project.
func (*VercelProject) Diff(_ context.Context, req infer.DiffRequest[VercelProjectArgs, VercelProjectState]) (infer.DiffResponse, error) {
	o, n := req.State.VercelProjectArgs, req.Inputs
	d := map[string]p.PropertyDiff{}
	set := func(key string, changed bool, kind p.DiffKind) {
		if changed {
			d[key] = p.PropertyDiff{Kind: kind, InputDiff: true}
		}
	}
	set("name", o.Name != n.Name, p.UpdateReplace)
	set("teamId", o.TeamID != n.TeamID, p.UpdateReplace)
	set("apiUrl", o.APIURL != n.APIURL, p.Update)
	set("token", o.Token != n.Token, p.Update)
	set("framework", o.Framework != n.Framework, p.Update)
	set("rootDirectory", o.RootDirectory != n.RootDirectory, p.Update)
	set("installCommand", o.InstallCommand != n.InstallCommand, p.Update)
	set("buildCommand", o.BuildCommand != n.BuildCommand, p.Update)
	set("domain", o.Domain != n.Domain, p.Update)
	set("adoptExisting", o.AdoptExisting != n.AdoptExisting, p.Update)
	set("targets", !slices.Equal(o.targets(), n.targets()), p.Update)
	mapDiff(d, "variables", o.Variables, n.Variables)
	mapDiff(d, "sensitiveVariables", o.Sensitive, n.Sensitive)
	return infer.DiffResponse{HasChanges: len(d) > 0, DetailedDiff: d}, nil
}

func mapDiff(d map[string]p.PropertyDiff, prop string, o, n map[string]string) {
	for k, v := range n {
		if old, ok := o[k]; !ok {
			d[family.KeyPath(prop, k)] = p.PropertyDiff{Kind: p.Add, InputDiff: true}
		} else if old != v {
			d[family.KeyPath(prop, k)] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	for k := range o {
		if _, ok := n[k]; !ok {
			d[family.KeyPath(prop, k)] = p.PropertyDiff{Kind: p.Delete, InputDiff: true}
		}
	}
}

// changedKeys names the variables whose value, type or presence moves.
func changedKeys(o, n VercelProjectArgs) (plain, sensitive []string) {
	for _, pair := range []struct {
		o, n map[string]string
		out  *[]string
	}{{o.Variables, n.Variables, &plain}, {o.Sensitive, n.Sensitive, &sensitive}} {
		for k, v := range pair.n {
			if old, ok := pair.o[k]; !ok || old != v {
				*pair.out = append(*pair.out, k)
			}
		}
		for k := range pair.o {
			if _, ok := pair.n[k]; !ok {
				*pair.out = append(*pair.out, k)
			}
		}
		slices.Sort(*pair.out)
	}
	return plain, sensitive
}

// Update changes the settings and the variables that moved, in place; the
// preview says which variables change (a sensitive one by name only).
func (*VercelProject) Update(ctx context.Context, req infer.UpdateRequest[VercelProjectArgs, VercelProjectState]) (infer.UpdateResponse[VercelProjectState], error) {
	o, n := req.State.VercelProjectArgs, req.Inputs
	state := req.State
	state.VercelProjectArgs = n
	if state.VariableIDs == nil {
		state.VariableIDs = map[string]string{}
	}
	plain, sensitive := changedKeys(o, n)
	targetsMoved := !slices.Equal(o.targets(), n.targets())
	if len(sensitive) > 0 {
		state.SensitiveRevision++
	}
	state.VariablesDigest = variablesDigest(n, state.SensitiveRevision)
	settingsMoved := o.settings() != n.settings()
	if req.DryRun {
		var parts []string
		if len(plain) > 0 {
			parts = append(parts, "variables "+strings.Join(plain, ", "))
		}
		if len(sensitive) > 0 {
			parts = append(parts, "sensitive variables "+strings.Join(sensitive, ", ")+" (values not shown)")
		}
		if settingsMoved {
			parts = append(parts, "build settings")
		}
		if len(parts) > 0 {
			p.GetLogger(ctx).Infof("vercel project %s: updated in place: %s", n.Name, strings.Join(parts, "; "))
		}
		return infer.UpdateResponse[VercelProjectState]{Output: state}, nil
	}
	// A variable without an ID, or a domain not attached, is what a create
	// or update that failed left to do.
	unrecorded := slices.ContainsFunc(slices.Collect(maps.Keys(n.wanted())), func(k string) bool { return state.VariableIDs[k] == "" })
	domainDue := n.Domain != "" && (n.Domain != o.Domain || !state.DomainAttached)
	if len(plain) == 0 && len(sensitive) == 0 && !targetsMoved && !settingsMoved && !unrecorded && !domainDue {
		return infer.UpdateResponse[VercelProjectState]{Output: state}, nil // the token, the API URL or adoptExisting: no call
	}
	cl, err := n.client()
	if err != nil {
		return infer.UpdateResponse[VercelProjectState]{}, err
	}
	if settingsMoved {
		if _, err := cl.UpdateProject(ctx, state.ProjectID, n.settings()); err != nil {
			return infer.UpdateResponse[VercelProjectState]{}, err
		}
	}
	if err := syncVariables(ctx, cl, &state, o.wanted()); err != nil {
		// What was updated stays updated; the old inputs make the next up
		// compare against them and redo only what is left.
		failed := req.State
		failed.VariableIDs = state.VariableIDs
		return infer.UpdateResponse[VercelProjectState]{Output: failed}, err
	}
	state.DomainAttached = state.DomainAttached && n.Domain == o.Domain
	if domainDue {
		if err := cl.AddDomain(ctx, state.ProjectID, n.Domain); err != nil {
			return infer.UpdateResponse[VercelProjectState]{}, err
		}
		state.DomainAttached = true
	}
	return infer.UpdateResponse[VercelProjectState]{Output: state}, nil
}

// Read refreshes every setting and variable; it serves `pulumi import` with
// an ID of <teamId>/<projectId> and the token in VERCEL_TOKEN.
func (*VercelProject) Read(ctx context.Context, req infer.ReadRequest[VercelProjectArgs, VercelProjectState]) (infer.ReadResponse[VercelProjectArgs, VercelProjectState], error) {
	type resp = infer.ReadResponse[VercelProjectArgs, VercelProjectState]
	state, inputs, id := req.State, req.Inputs, req.ID
	if state.Token == "" {
		// An import: the ID names the team, the environment the token.
		team, pid, ok := strings.Cut(id, "/")
		if !ok {
			team, pid = "", id
		}
		state.TeamID, state.Token, state.APIURL, id = team, os.Getenv("VERCEL_TOKEN"), os.Getenv("VERCEL_API_URL"), pid
		if state.Token == "" {
			return resp{}, errors.New("vercel: importing a project needs the token in VERCEL_TOKEN")
		}
		inputs.TeamID, inputs.Token, inputs.APIURL = team, state.Token, state.APIURL
	}
	cl, err := state.client()
	if err != nil {
		return resp{}, err
	}
	proj, err := cl.GetProject(ctx, id)
	if errors.Is(err, vercelapi.ErrNotFound) {
		return resp{}, nil
	}
	if err != nil {
		return resp{}, err
	}
	envs, err := cl.ListEnv(ctx, proj.ID)
	if err != nil {
		return resp{}, err
	}
	s := proj.Settings()
	inputs.Name, inputs.Framework, inputs.RootDirectory, inputs.InstallCommand, inputs.BuildCommand =
		proj.Name, s.Framework, s.RootDirectory, s.InstallCommand, s.BuildCommand
	plain, sensitive, ids := map[string]string{}, map[string]string{}, map[string]string{}
	var targets []string
	for _, e := range envs {
		ids[e.Key] = e.ID
		targets = e.Target
		if e.Type == "sensitive" {
			// Never readable: the value in state stands, unless the
			// variable itself is gone.
			sensitive[e.Key] = state.Sensitive[e.Key]
			continue
		}
		plain[e.Key] = e.Value
	}
	inputs.Variables, inputs.Sensitive = plain, sensitive
	if len(envs) > 0 && !slices.Equal(sortedCopy(targets), sortedCopy(inputs.targets())) {
		inputs.Targets = targets
	}
	state.VercelProjectArgs = inputs
	state.ProjectID, state.VariableIDs = proj.ID, ids
	state.VariablesDigest = variablesDigest(inputs, state.SensitiveRevision)
	return resp{ID: proj.ID, Inputs: inputs, State: state}, nil
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// Delete removes the project, its variables and deployments.
func (*VercelProject) Delete(ctx context.Context, req infer.DeleteRequest[VercelProjectState]) (infer.DeleteResponse, error) {
	cl, err := req.State.client()
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	return infer.DeleteResponse{}, cl.DeleteProject(ctx, req.ID)
}
