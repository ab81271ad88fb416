package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modaldeploy"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// ModalApp is the upstream Modal app of one installation: its named secrets,
// the deployed app, its web endpoints and their health.
type ModalApp struct {
	// HealthTimeout bounds the wait for api_health after a deploy (default
	// 2 minutes); HealthPoll is the pause between tries (default 2 s).
	HealthTimeout time.Duration
	HealthPoll    time.Duration
}

// ModalAppToken is the ModalApp resource's type token.
const ModalAppToken = "openinspect:index:ModalApp"

// ModalAppArgs are the inputs of a ModalApp.
type ModalAppArgs struct {
	Source        string        `pulumi:"source"`
	AppName       string        `pulumi:"appName,optional"`
	Environment   string        `pulumi:"environment,optional"`
	Secrets       []ModalSecret `pulumi:"secrets,optional"`
	D1DatabaseID  string        `pulumi:"d1DatabaseId,optional"`
	AdoptExisting bool          `pulumi:"adoptExisting,optional"`
	KeepOnDelete  bool          `pulumi:"keepOnDelete,optional"`
	Owner         string        `pulumi:"owner,optional"`
	TakeOverFrom  string        `pulumi:"takeOverFrom,optional"`
}

// ModalSecret is one named Modal secret and its values.
type ModalSecret struct {
	Name   string            `pulumi:"name"`
	Values map[string]string `pulumi:"values" provider:"secret"`
}

// ModalAppState is what the provider records about a ModalApp.
type ModalAppState struct {
	ModalAppArgs
	// DeployedEnvironment is the environment the app lives in, as Modal
	// named it (the input, the provider's modalEnvironment or the default).
	DeployedEnvironment string `pulumi:"deployedEnvironment"`
	Workspace           string `pulumi:"workspace"`
	WebSuffix           string `pulumi:"webSuffix"`
	AppID               string `pulumi:"appId"`
	// SourceDigest is the digest of the sources last deployed; empty until a
	// deploy succeeded, so a failed one is retried by the next up.
	SourceDigest string `pulumi:"sourceDigest"`
	// SecretHashes are digests of each secret's values as last written.
	SecretHashes map[string]string `pulumi:"secretHashes,optional" provider:"secret"`
	Endpoints    map[string]string `pulumi:"endpoints,optional"`
	HealthURL    string            `pulumi:"healthUrl"`
	Health       string            `pulumi:"health"`
	CLIVersion   string            `pulumi:"cliVersion"`
	Adopted      bool              `pulumi:"adopted"`
}

var (
	_ infer.ExplicitDependencies[ModalAppArgs, ModalAppState] = (*ModalApp)(nil)
	_ infer.CustomCheck[ModalAppArgs]                         = (*ModalApp)(nil)
	_ infer.CustomDiff[ModalAppArgs, ModalAppState]           = (*ModalApp)(nil)
	_ infer.CustomUpdate[ModalAppArgs, ModalAppState]         = (*ModalApp)(nil)
	_ infer.CustomRead[ModalAppArgs, ModalAppState]           = (*ModalApp)(nil)
	_ infer.CustomDelete[ModalAppState]                       = (*ModalApp)(nil)
)

// Annotate documents the resource.
func (m *ModalApp) Annotate(a infer.Annotator) {
	a.Describe(m, "The Open-Inspect Modal app of one installation, in the provider's Modal environment: the named "+
		"secrets the app reads (written with overwrite, a changed value touches only its secret), the pinned upstream "+
		"app deployed the way upstream's recipe does (sandbox image build, then `modal deploy`) from a virtual "+
		"environment the provider creates and caches with the locked Modal CLI, its web endpoints discovered and "+
		"`api_health` checked. A digest over the app and sandbox runtime sources and lock files decides redeploys: an "+
		"unchanged app never redeploys.\n\nOne installation per Modal environment: upstream's app and secret names are "+
		"fixed, so an app of that name already deployed there is refused unless adoptExisting is set. Delete terminates "+
		"the app's sandboxes, deletes the images the installation recorded in its D1 database, stops the app and "+
		"deletes its secrets; it never touches another environment.")
}

// Annotate documents the inputs.
func (a *ModalAppArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Source, "An Open-Inspect checkout root (or its packages/modal-infra directory) holding the Modal app "+
		"and the sandbox runtime at the pinned commit.")
	an.Describe(&a.Environment, "The Modal environment (default: the provider's modalEnvironment, else the workspace's "+
		"default). Changing it replaces the resource.")
	an.Describe(&a.AppName, "The Modal app name upstream's app deploys as (default from the pinned contract: open-inspect). "+
		"Changing it replaces the resource.")
	an.Describe(&a.Secrets, "The named Modal secrets the app reads, written (overwriting) before the deploy.")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, where the control plane records the images it builds; "+
		"on delete exactly those are deleted. Without it no image is deleted.")
	an.Describe(&a.AdoptExisting, "Take over an app of this name already deployed in the environment that records no "+
		"installation, instead of failing. An environment recording another installation is never taken over by it: see takeOverFrom.")
	an.Describe(&a.Owner, "The installation identity the environment's app belongs to (the OpenInspect component passes its "+
		"NameLock's installationId). It is recorded before the deploy as the named secret "+modalOwnerPrefix+"<identity> "+
		"in the environment, so a create that finds the app already deployed with this evidence adopts it (finishing a "+
		"deploy a killed run never recorded), and an environment recording another installation is refused even with adoptExisting.")
	an.Describe(&a.TakeOverFrom, "The identity of another installation whose app in this environment is taken over, with a "+
		"warning (its evidence is replaced by this installation's). Its destroy could then stop the app: only for moving an "+
		"installation between stacks.")
	an.Describe(&a.KeepOnDelete, "Keep the app, its secrets, sandboxes and images on delete (the installation's Orphan policy) "+
		"and say what was kept.")
}

// Annotate documents a secret.
func (s *ModalSecret) Annotate(a infer.Annotator) {
	a.Describe(s, "A named Modal secret.")
	a.Describe(&s.Name, "The secret's name in the Modal environment.")
	a.Describe(&s.Values, "Its keys and values (each value a Pulumi secret).")
}

// Annotate documents the outputs.
func (s *ModalAppState) Annotate(a infer.Annotator) {
	a.Describe(&s.DeployedEnvironment, "The Modal environment the app is deployed in (the control plane's MODAL_ENVIRONMENT).")
	a.Describe(&s.Workspace, "The Modal workspace (the control plane's MODAL_WORKSPACE).")
	a.Describe(&s.WebSuffix, "The environment's web suffix in endpoint hosts (MODAL_ENVIRONMENT_WEB_SUFFIX).")
	a.Describe(&s.AppID, "The deployed app's ID.")
	a.Describe(&s.SourceDigest, "SHA-256 over the sources and lock files last deployed.")
	a.Describe(&s.SecretHashes, "Digests of each secret's values as last written.")
	a.Describe(&s.Endpoints, "Web endpoint URL by function name.")
	a.Describe(&s.HealthURL, "The api_health endpoint.")
	a.Describe(&s.Health, "What api_health answered after the last deploy.")
	a.Describe(&s.CLIVersion, "The Modal CLI version the app was deployed with.")
	a.Describe(&s.Adopted, "Whether an existing app was taken over.")
}

// WireDependencies keeps the digests of secret values secret: a digest of a
// weak secret could be brute-forced from state.
func (*ModalApp) WireDependencies(f infer.FieldSelector, _ *ModalAppArgs, state *ModalAppState) {
	f.OutputField(&state.SecretHashes).AlwaysSecret()
}

var modalSecretName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Check validates the inputs before any remote call.
func (*ModalApp) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ModalAppArgs], error) {
	args, failures, err := infer.DefaultCheck[ModalAppArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[ModalAppArgs]{}, err
	}
	bad := func(property, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: fmt.Sprintf(format, a...)})
	}
	if !family.IsUnknown(req.NewInputs, "source") {
		if _, err := modalAppDir(args.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if args.Environment != "" {
		// Modal refuses such a name only on the first call naming it.
		if err := modalapi.CheckEnvironmentName(args.Environment); err != nil {
			bad("environment", "%v", err)
		}
	}
	for _, o := range []struct{ field, value string }{{"owner", args.Owner}, {"takeOverFrom", args.TakeOverFrom}} {
		if o.value != "" && !modalSecretName.MatchString(modalOwnerPrefix+o.value) {
			bad(o.field, "%q cannot name a Modal secret %s<identity> (letters, digits, '_', '.', '-', at most %d)",
				o.value, modalOwnerPrefix, 64-len(modalOwnerPrefix))
		}
	}
	// A value's name is its map key, known even when the value is not: these
	// problems are reported whatever a preview knows.
	var keyFailures []p.CheckFailure
	seen := map[string]bool{}
	for i, s := range args.Secrets {
		path := fmt.Sprintf("secrets[%d]", i)
		switch {
		case !modalSecretName.MatchString(s.Name):
			bad(path+".name", "%q is not a Modal secret name (letters, digits, '_', '.', '-', at most 64)", s.Name)
		case seen[s.Name]:
			bad(path+".name", "secret %q is given twice", s.Name)
		}
		seen[s.Name] = true
		for _, k := range slices.Sorted(maps.Keys(s.Values)) {
			if !envKeyPattern.MatchString(k) {
				keyFailures = append(keyFailures, p.CheckFailure{Property: path + ".values." + k,
					Reason: fmt.Sprintf("%q is not an environment variable name", k)})
			}
		}
	}
	// A field computed at a preview decodes as its zero value: not a problem yet.
	return infer.CheckResponse[ModalAppArgs]{Inputs: args, Failures: append(family.KnownFailures(req.NewInputs, failures), keyFailures...)}, nil
}

var envKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// modalAppDir is the app directory inside source (a checkout root or the app
// directory itself), checked to hold what the deploy runs.
func modalAppDir(source string) (string, error) {
	if source == "" {
		return "", fmt.Errorf("required: an Open-Inspect checkout (or its packages/modal-infra)")
	}
	root, err := builder.CheckoutRoot(source)
	if err != nil {
		return "", err
	}
	c, err := upstream.Load()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(c.Sandbox.Modal.Package))
	for _, f := range []string{modaldeploy.AppFile, "uv.lock"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", fmt.Errorf("%s has no %s: the Modal app is upstream's %s", dir, f, c.Sandbox.Modal.Package)
		}
	}
	return dir, nil
}

// modalPlan is what a ModalApp's inputs resolve to locally.
type modalPlan struct {
	appDir, appName, digest string
	functions               []string // the contract's endpoint names (dashed)
	health                  upstream.ModalHealth
	cliVersion              string
}

func planModal(args ModalAppArgs) (modalPlan, error) {
	c, err := upstream.Load()
	if err != nil {
		return modalPlan{}, err
	}
	dir, err := modalAppDir(args.Source)
	if err != nil {
		return modalPlan{}, fmt.Errorf("source: %w", err)
	}
	digest, err := builder.SourceDigest(dir, c.Sandbox.Modal.ChangeDetection)
	if err != nil {
		return modalPlan{}, err
	}
	name := args.AppName
	if name == "" {
		name = c.Sandbox.Modal.AppName
	}
	return modalPlan{appDir: dir, appName: name, digest: digest, functions: c.Sandbox.Modal.Endpoints.Functions,
		health: c.Sandbox.Modal.Health, cliVersion: c.Sandbox.Modal.ModalClientVersion}, nil
}

// secretHashes digests each secret's values (map keys marshal sorted).
func secretHashes(secrets []ModalSecret) map[string]string {
	out := make(map[string]string, len(secrets))
	for _, s := range secrets {
		raw, _ := json.Marshal(s.Values)
		out[s.Name] = family.SHA256Hex(append([]byte("openinspect-modal-secret\x00"+s.Name+"\x00"), raw...))
	}
	return out
}

// Diff decides from state and local files alone (no remote call) whether the
// secrets change and whether the app redeploys, and says why.
func (*ModalApp) Diff(ctx context.Context, req infer.DiffRequest[ModalAppArgs, ModalAppState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	detailed := map[string]p.PropertyDiff{}
	if plannedName(olds.ModalAppArgs) != plannedName(news) {
		detailed["appName"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if news.Environment != "" && news.Environment != olds.DeployedEnvironment {
		detailed["environment"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	plan, err := planModal(news)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	log := p.GetLogger(ctx)
	switch {
	case olds.SourceDigest == "":
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("modal app %s: deploy pending (the last deploy did not finish)", plan.appName)
	case olds.SourceDigest != plan.digest:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("modal app %s: redeploy: source digest %s -> %s", plan.appName, short(olds.SourceDigest), short(plan.digest))
	case olds.Source != news.Source:
		// Another path to the same sources: recorded, not redeployed.
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	newHashes := secretHashes(news.Secrets)
	for _, name := range slices.Sorted(maps.Keys(union(olds.SecretHashes, newHashes))) {
		if olds.SecretHashes[name] != newHashes[name] {
			detailed["secrets"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
			log.Infof("modal app %s: secret %s changes (no redeploy)", plan.appName, name)
		}
	}
	for key, changed := range map[string]bool{
		"d1DatabaseId":  olds.D1DatabaseID != news.D1DatabaseID,
		"adoptExisting": olds.AdoptExisting != news.AdoptExisting,
		"keepOnDelete":  olds.KeepOnDelete != news.KeepOnDelete,
		"owner":         olds.Owner != news.Owner,
		"takeOverFrom":  olds.TakeOverFrom != news.TakeOverFrom,
	} {
		if changed {
			detailed[key] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed, DeleteBeforeReplace: true}, nil
}

func plannedName(a ModalAppArgs) string {
	if a.AppName != "" {
		return a.AppName
	}
	c, err := upstream.Load()
	if err != nil {
		return ""
	}
	return c.Sandbox.Modal.AppName
}

func union[V any](a, b map[string]V) map[string]V {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]V{}
	}
	maps.Copy(out, b)
	return out
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// Create writes the secrets, deploys the app, discovers its endpoints and
// checks its health.
func (m *ModalApp) Create(ctx context.Context, req infer.CreateRequest[ModalAppArgs]) (infer.CreateResponse[ModalAppState], error) {
	if req.DryRun {
		return infer.CreateResponse[ModalAppState]{Output: ModalAppState{ModalAppArgs: req.Inputs}}, nil
	}
	plan, err := planModal(req.Inputs)
	if err != nil {
		return infer.CreateResponse[ModalAppState]{}, err
	}
	cfg := config.FromContext(ctx)
	client, err := cfg.ModalClient(req.Inputs.Environment)
	if err != nil {
		return infer.CreateResponse[ModalAppState]{}, err
	}
	defer client.Close()
	env, err := client.Environment(ctx)
	if err != nil {
		return infer.CreateResponse[ModalAppState]{}, err
	}
	existing, found, err := client.DeployedApp(ctx, plan.appName)
	if err != nil {
		return infer.CreateResponse[ModalAppState]{}, err
	}
	if err := claimModal(ctx, client, req.Inputs, plan.appName, env, existing, found); err != nil {
		return infer.CreateResponse[ModalAppState]{}, err
	}
	state := ModalAppState{ModalAppArgs: req.Inputs, DeployedEnvironment: env.Name, Workspace: env.Workspace,
		WebSuffix: env.WebSuffix, Adopted: found, SecretHashes: map[string]string{}}
	state, err = m.converge(ctx, cfg, client, plan, state)
	if err != nil && len(state.SecretHashes) > 0 {
		// Secrets exist remotely: keep them in state so the next up finishes.
		return infer.CreateResponse[ModalAppState]{ID: plan.appName, Output: state},
			initFailed(err)
	}
	return infer.CreateResponse[ModalAppState]{ID: plan.appName, Output: state}, err
}

// Update writes the secrets that changed and redeploys only when the sources
// moved (or the last deploy did not finish).
func (m *ModalApp) Update(ctx context.Context, req infer.UpdateRequest[ModalAppArgs, ModalAppState]) (infer.UpdateResponse[ModalAppState], error) {
	if req.DryRun {
		state := req.State
		state.ModalAppArgs = req.Inputs
		return infer.UpdateResponse[ModalAppState]{Output: state}, nil
	}
	plan, err := planModal(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[ModalAppState]{}, err
	}
	cfg := config.FromContext(ctx)
	client, err := guardedModal(cfg, req.State)
	if err != nil {
		return infer.UpdateResponse[ModalAppState]{}, err
	}
	defer client.Close()
	state := req.State
	state.ModalAppArgs = req.Inputs
	if req.State.Owner != req.Inputs.Owner {
		// Recorded before anything else, as in a create; an older stack
		// gains its evidence here.
		if err := markModal(ctx, client, req.Inputs.Owner, plan.appName); err != nil {
			return infer.UpdateResponse[ModalAppState]{}, err
		}
		if old := req.State.Owner; old != "" {
			if err := client.DeleteSecret(ctx, modalOwnerPrefix+old); err != nil {
				return infer.UpdateResponse[ModalAppState]{}, err
			}
		}
	}
	state, err = m.converge(ctx, cfg, client, plan, state)
	if err != nil {
		return infer.UpdateResponse[ModalAppState]{Output: state},
			initFailed(err)
	}
	return infer.UpdateResponse[ModalAppState]{Output: state}, nil
}

// guardedModal returns a client for the environment the state was recorded
// in, refusing a provider configured for another: reads and deletes would
// otherwise address another installation's app.
func guardedModal(cfg *config.Config, state ModalAppState) (*modalapi.Client, error) {
	configured := cfg.ModalEnvironmentOr(state.Environment)
	if state.DeployedEnvironment != "" && configured != "" && configured != state.DeployedEnvironment {
		return nil, fmt.Errorf("modal app %q lives in Modal environment %q but the provider is configured for %q; "+
			"restore openinspect:modalEnvironment to manage it", state.AppName, state.DeployedEnvironment, configured)
	}
	// The recorded environment, so a default that moved cannot redirect us.
	return cfg.ModalClient(state.DeployedEnvironment)
}

// converge brings secrets and app to plan. Each step records its result in
// the returned state only once it landed, so after a failure the next diff
// shows what is left.
func (m *ModalApp) converge(ctx context.Context, cfg *config.Config, client *modalapi.Client, plan modalPlan, state ModalAppState) (ModalAppState, error) {
	log := p.GetLogger(ctx)
	want := secretHashes(state.Secrets)
	var redact []string
	for _, s := range state.Secrets {
		if state.SecretHashes[s.Name] == want[s.Name] {
			continue
		}
		log.InfoStatusf("modal: writing secret %s", s.Name)
		if err := client.UpsertSecret(ctx, s.Name, s.Values); err != nil {
			return state, err
		}
		if state.SecretHashes == nil {
			state.SecretHashes = map[string]string{}
		}
		state.SecretHashes[s.Name] = want[s.Name]
	}
	for name := range state.SecretHashes {
		if _, keep := want[name]; !keep {
			if err := client.DeleteSecret(ctx, name); err != nil {
				return state, err
			}
			delete(state.SecretHashes, name)
		}
	}
	for _, s := range state.Secrets {
		for _, v := range s.Values {
			redact = append(redact, v)
		}
	}
	if state.SourceDigest != plan.digest || state.AppID == "" {
		python, err := cfg.Python()
		if err != nil {
			return state, err
		}
		cache, err := cfg.CacheRoot()
		if err != nil {
			return state, err
		}
		runner := &modaldeploy.Runner{Python: python, CacheDir: filepath.Join(cache, "modal-venvs"),
			Progress: func(s string) { log.InfoStatus(s) }, Redact: redact}
		res, err := runner.Run(ctx, plan.appDir, cfg.ModalTarget(state.DeployedEnvironment))
		if err != nil {
			return state, err
		}
		log.Infof("modal app %s deployed (environment ready in %s%s, deploy %s)", plan.appName,
			res.Setup.Round(time.Millisecond), map[bool]string{true: ", cached", false: ""}[res.Reused], res.Deploy.Round(time.Second))
		app, found, err := client.DeployedApp(ctx, plan.appName)
		if err != nil {
			return state, err
		}
		if !found {
			return state, fmt.Errorf("modal app %q is not deployed after `modal deploy` succeeded", plan.appName)
		}
		state.AppID = app.ID
		state.CLIVersion = plan.cliVersion
		if err := m.discover(ctx, client, plan, &state); err != nil {
			return state, err
		}
		state.SourceDigest = plan.digest
	}
	return state, nil
}

// discover reads every endpoint's URL and waits for api_health to answer.
func (m *ModalApp) discover(ctx context.Context, client *modalapi.Client, plan modalPlan, state *ModalAppState) error {
	state.Endpoints = map[string]string{}
	for _, fn := range plan.functions {
		u, err := client.WebURL(ctx, plan.appName, strings.ReplaceAll(fn, "-", "_"))
		if err != nil {
			return err
		}
		state.Endpoints[fn] = u
	}
	state.HealthURL = state.Endpoints[plan.health.Function]
	if state.HealthURL == "" {
		return fmt.Errorf("modal app %q has no %s endpoint", plan.appName, plan.health.Function)
	}
	p.GetLogger(ctx).InfoStatusf("modal: checking %s", plan.health.Function)
	health, err := checkHealth(ctx, state.HealthURL, plan.health.Body, m.healthTimeout(), m.healthPoll())
	if err != nil {
		return fmt.Errorf("modal app %q: %w", plan.appName, err)
	}
	state.Health = health
	return nil
}

func (m *ModalApp) healthTimeout() time.Duration {
	if m.HealthTimeout > 0 {
		return m.HealthTimeout
	}
	return 2 * time.Minute
}

func (m *ModalApp) healthPoll() time.Duration {
	if m.HealthPoll > 0 {
		return m.HealthPoll
	}
	return 2 * time.Second
}

// Read refreshes from Modal: a stopped or missing app leaves the state (the
// next up deploys again); a secret missing its keys is written again.
func (*ModalApp) Read(ctx context.Context, req infer.ReadRequest[ModalAppArgs, ModalAppState]) (infer.ReadResponse[ModalAppArgs, ModalAppState], error) {
	cfg := config.FromContext(ctx)
	client, err := guardedModal(cfg, req.State)
	if err != nil {
		return infer.ReadResponse[ModalAppArgs, ModalAppState]{}, err
	}
	defer client.Close()
	state := req.State
	name := req.ID
	app, found, err := client.DeployedApp(ctx, name)
	if err != nil {
		return infer.ReadResponse[ModalAppArgs, ModalAppState]{}, err
	}
	if !found {
		return infer.ReadResponse[ModalAppArgs, ModalAppState]{}, nil
	}
	if app.ID != state.AppID {
		// Deployed again outside this stack: deploy ours on the next up.
		state.AppID, state.SourceDigest = app.ID, ""
	}
	for _, s := range state.Secrets {
		keys := slices.Sorted(maps.Keys(s.Values))
		present, ok, err := client.SecretKeys(ctx, s.Name, keys)
		if err != nil {
			return infer.ReadResponse[ModalAppArgs, ModalAppState]{}, err
		}
		if !ok || len(present) != len(keys) {
			delete(state.SecretHashes, s.Name)
		}
	}
	return infer.ReadResponse[ModalAppArgs, ModalAppState]{ID: name, Inputs: req.Inputs, State: state}, nil
}

// Delete tears down what this installation owns in its environment, or
// reports what it keeps.
func (*ModalApp) Delete(ctx context.Context, req infer.DeleteRequest[ModalAppState]) (infer.DeleteResponse, error) {
	state := req.State
	log := p.GetLogger(ctx)
	secrets := slices.Sorted(maps.Keys(state.SecretHashes))
	if state.KeepOnDelete {
		// The ownership evidence stays too: the kept app is still this
		// installation's, and another is refused it.
		log.Warningf("modal app %s (id %s) kept in environment %q with its secrets %s, sandboxes and images (deletion policy Orphan)",
			req.ID, state.AppID, state.DeployedEnvironment, strings.Join(secrets, ", "))
		return infer.DeleteResponse{}, nil
	}
	cfg := config.FromContext(ctx)
	client, err := guardedModal(cfg, state)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	defer client.Close()
	if state.AppID != "" {
		log.InfoStatusf("modal: terminating the sandboxes of %s", req.ID)
		n, err := client.TerminateSandboxes(ctx, state.AppID, nil)
		if err != nil {
			return infer.DeleteResponse{}, err
		}
		// Only the images the installation recorded: equal image definitions
		// share one image across a workspace, so the images the app's own
		// functions and sandboxes run on may serve another installation.
		images, err := recordedImages(ctx, state.D1DatabaseID, "modal")
		if err != nil {
			return infer.DeleteResponse{}, err
		}
		for _, id := range images {
			if err := client.DeleteImage(ctx, id); err != nil {
				return infer.DeleteResponse{}, err
			}
		}
		if err := client.StopApp(ctx, state.AppID); err != nil {
			return infer.DeleteResponse{}, err
		}
		log.Infof("modal app %s stopped: %d sandboxes terminated, %d images deleted", req.ID, n, len(images))
	}
	for _, name := range secrets {
		if err := client.DeleteSecret(ctx, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	// Last, so a delete interrupted before this still finds the
	// environment this installation's. Only this installation's evidence:
	// the name carries its identity.
	if state.Owner != "" {
		if err := client.DeleteSecret(ctx, modalOwnerPrefix+state.Owner); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	return infer.DeleteResponse{}, nil
}
