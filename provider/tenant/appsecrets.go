package tenant

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/controlplane"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// AppSecrets seeds the control plane's global secrets store: the values every
// sandbox receives as environment (e.g. ANTHROPIC_API_KEY).
type AppSecrets struct{}

const AppSecretsToken = "openinspect:index:AppSecrets"

// AppSecretsArgs are the inputs of AppSecrets.
type AppSecretsArgs struct {
	ControlPlaneURL string            `pulumi:"controlPlaneUrl"`
	Service         string            `pulumi:"service,optional"`
	ServiceSecret   string            `pulumi:"serviceSecret" provider:"secret"`
	Secrets         map[string]string `pulumi:"secrets" provider:"secret"`
}

// AppSecretsState is what the provider records about AppSecrets.
type AppSecretsState struct {
	AppSecretsArgs
	// Keys are the keys this resource set; only these are ever deleted.
	Keys []string `pulumi:"keys,optional"`
	// ValuesHash digests the values as last seeded (the store never returns
	// values, so this is how a changed value is noticed).
	ValuesHash string `pulumi:"valuesHash" provider:"secret"`
	// Missing are keys this resource set that refresh found gone from the
	// store (a wiped store); the next update puts them back.
	Missing []string `pulumi:"missing,optional"`
}

var (
	_ infer.CustomCheck[AppSecretsArgs]                           = (*AppSecrets)(nil)
	_ infer.CustomDiff[AppSecretsArgs, AppSecretsState]           = (*AppSecrets)(nil)
	_ infer.CustomUpdate[AppSecretsArgs, AppSecretsState]         = (*AppSecrets)(nil)
	_ infer.CustomRead[AppSecretsArgs, AppSecretsState]           = (*AppSecrets)(nil)
	_ infer.CustomDelete[AppSecretsState]                         = (*AppSecrets)(nil)
	_ infer.ExplicitDependencies[AppSecretsArgs, AppSecretsState] = (*AppSecrets)(nil)
)

// Annotate documents the resource.
func (r *AppSecrets) Annotate(a infer.Annotator) {
	a.Describe(r, "Seeds the global secrets store of a deployed Open-Inspect control plane (the environment "+
		"every sandbox receives) through its service-signed API, instead of clicking them into the web UI.\n\n"+
		"Keys removed from `secrets` are deleted from the store; keys added there by other means are left alone. "+
		"The store never returns values, so a changed value is noticed by its hash. Refresh notices keys that "+
		"disappeared from the store (a wiped store) and the next update puts them back.")
}

// Annotate documents the inputs.
func (a *AppSecretsArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.ControlPlaneURL, "Base URL of the control-plane worker.")
	an.Describe(&a.Service, "The service identity requests are signed as: slack-bot, github-bot or linear-bot (their signatures are accepted on the secrets API without a browser session).")
	an.SetDefault(&a.Service, "slack-bot")
	an.Describe(&a.ServiceSecret, "That service's shared secret: the control plane's SERVICE_AUTH_SECRET_<SERVICE>.")
	an.Describe(&a.Secrets, "Secrets to put in the store, by key.")
}

// Annotate documents the outputs.
func (s *AppSecretsState) Annotate(a infer.Annotator) {
	a.Describe(&s.Keys, "The keys this resource manages.")
	a.Describe(&s.ValuesHash, "Hash of the values as last seeded.")
	a.Describe(&s.Missing, "Managed keys that the last refresh found missing from the store.")
}

// WireDependencies keeps the values hash secret.
func (*AppSecrets) WireDependencies(f infer.FieldSelector, _ *AppSecretsArgs, state *AppSecretsState) {
	f.OutputField(&state.ValuesHash).AlwaysSecret()
}

// The store's rules (upstream's secrets route): upper-cased names of letters,
// digits and '_', at most 256 characters, not a name the sandbox runtime
// owns; values up to 16 KiB; at most 50 keys.
var (
	secretKeyPattern = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,255}$`)
	reservedKeys     = []string{"PATH", "HOME", "USER", "SHELL", "TERM", "PWD", "LANG", "PYTHONUNBUFFERED", "SANDBOX_ID",
		"CONTROL_PLANE_URL", "SANDBOX_AUTH_TOKEN", "REPO_OWNER", "REPO_NAME", "GITHUB_APP_TOKEN", "SESSION_CONFIG",
		"RESTORED_FROM_SNAPSHOT", "OPENCODE_CONFIG_CONTENT"}
	signingServices = []string{"slack-bot", "github-bot", "linear-bot"}
)

const (
	maxAppSecretValue = 16 << 10
	MaxAppSecrets     = 50
	// MaxAppSecretsTotal bounds the values of one scope together.
	MaxAppSecretsTotal = 64 << 10
)

// Check validates everything before any call; messages name the field.
func (*AppSecrets) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[AppSecretsArgs], error) {
	args, failures, err := infer.DefaultCheck[AppSecretsArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[AppSecretsArgs]{Inputs: args, Failures: failures}, err
	}
	fail := func(field, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: field, Reason: fmt.Sprintf(format, a...)})
	}
	if !family.IsUnknown(req.NewInputs, "controlPlaneUrl") {
		if _, err := controlplane.New(args.ControlPlaneURL, "x", "x"); err != nil {
			fail("controlPlaneUrl", "%v", err)
		}
	}
	if !slices.Contains(signingServices, args.Service) && !family.IsUnknown(req.NewInputs, "service") {
		fail("service", "%q cannot seed secrets: use one of %s (a web signature also needs a browser session)", args.Service, strings.Join(signingServices, ", "))
	}
	if !family.IsUnknown(req.NewInputs, "serviceSecret") && args.ServiceSecret == "" {
		fail("serviceSecret", "the service secret is empty")
	}
	// A computed map decodes as no entries, which only undercounts; the keys
	// of a known map are known even when one value is not (a generated
	// secret at a preview), so only that value's check waits.
	if len(args.Secrets) > MaxAppSecrets {
		fail("secrets", "%d secrets given; the store holds at most %d", len(args.Secrets), MaxAppSecrets)
	}
	for _, k := range slices.Sorted(maps.Keys(args.Secrets)) {
		switch problem := AppSecretKeyProblem(k); {
		case problem != "":
			fail("secrets."+k, "%s", problem)
		case family.IsUnknown(req.NewInputs, family.KeyPath("secrets", k)):
		default:
			if problem := AppSecretValueProblem(k, args.Secrets[k]); problem != "" {
				fail("secrets."+k, "%s", problem)
			}
		}
	}
	return infer.CheckResponse[AppSecretsArgs]{Inputs: args, Failures: failures}, nil
}

// AppSecretValueProblem says what is wrong with the value of secret k for the
// store (empty, too long), or "". It never quotes the value.
func AppSecretValueProblem(k, v string) string {
	switch {
	case v == "":
		return fmt.Sprintf("secret %s has no value", k)
	case len(v) > maxAppSecretValue:
		return fmt.Sprintf("the value is %d bytes; the store takes at most %d", len(v), maxAppSecretValue)
	}
	return ""
}

// AppSecretName is the name the store keeps key under: upstream's secrets
// store accepts letters of either case and upper-cases them.
func AppSecretName(key string) string { return strings.ToUpper(key) }

// AppSecretKeyProblem says what is wrong with a key for the secrets store, or "".
func AppSecretKeyProblem(k string) string {
	switch {
	case !secretKeyPattern.MatchString(k):
		return fmt.Sprintf("%q is not a valid secret name: use upper-case letters, digits and '_' (the store upper-cases names), not starting with a digit, at most 256 characters", k)
	case slices.Contains(reservedKeys, k):
		return fmt.Sprintf("%s is reserved for the sandbox runtime", k)
	}
	return ""
}

func (a AppSecretsArgs) valuesHash() string {
	raw, _ := json.Marshal(a.Secrets) // keys marshal sorted
	return family.SHA256Hex(append([]byte("openinspect-app-secrets\x00"), raw...))
}

func (a AppSecretsArgs) client() (*controlplane.Client, error) {
	return controlplane.New(a.ControlPlaneURL, a.Service, a.ServiceSecret)
}

// Diff decides from state alone: keys added or removed, a changed value, or
// keys a refresh found missing.
func (*AppSecrets) Diff(_ context.Context, req infer.DiffRequest[AppSecretsArgs, AppSecretsState]) (infer.DiffResponse, error) {
	detailed := map[string]p.PropertyDiff{}
	if req.Inputs.ControlPlaneURL != req.State.ControlPlaneURL {
		detailed["controlPlaneUrl"] = p.PropertyDiff{Kind: p.UpdateReplace, InputDiff: true}
	}
	if req.Inputs.Service != req.State.Service {
		detailed["service"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if req.Inputs.ServiceSecret != req.State.ServiceSecret {
		detailed["serviceSecret"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if !slices.Equal(slices.Sorted(maps.Keys(req.Inputs.Secrets)), req.State.Keys) || req.Inputs.valuesHash() != req.State.ValuesHash {
		detailed["secrets"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if len(req.State.Missing) > 0 {
		detailed["missing"] = p.PropertyDiff{Kind: p.Update}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// Create seeds every secret.
func (r *AppSecrets) Create(ctx context.Context, req infer.CreateRequest[AppSecretsArgs]) (infer.CreateResponse[AppSecretsState], error) {
	state := AppSecretsState{AppSecretsArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[AppSecretsState]{Output: state}, nil
	}
	state, err := seed(ctx, req.Inputs, AppSecretsState{})
	return infer.CreateResponse[AppSecretsState]{ID: req.Inputs.ControlPlaneURL, Output: state}, err
}

// Update puts new and changed values (and keys a wiped store lost) and
// deletes the keys this resource set that are no longer wanted.
func (*AppSecrets) Update(ctx context.Context, req infer.UpdateRequest[AppSecretsArgs, AppSecretsState]) (infer.UpdateResponse[AppSecretsState], error) {
	if req.DryRun {
		state := req.State
		state.AppSecretsArgs = req.Inputs
		return infer.UpdateResponse[AppSecretsState]{Output: state}, nil
	}
	state, err := seed(ctx, req.Inputs, req.State)
	return infer.UpdateResponse[AppSecretsState]{Output: state}, err
}

func seed(ctx context.Context, args AppSecretsArgs, prior AppSecretsState) (AppSecretsState, error) {
	client, err := args.client()
	if err != nil {
		return prior, err
	}
	state := prior
	if args.valuesHash() != prior.ValuesHash || len(prior.Missing) > 0 || !slices.Equal(slices.Sorted(maps.Keys(args.Secrets)), prior.Keys) {
		if len(args.Secrets) > 0 {
			if err := client.PutSecrets(ctx, args.Secrets); err != nil {
				return prior, fmt.Errorf("seeding %d secrets: %w", len(args.Secrets), err)
			}
		}
	}
	for _, key := range prior.Keys {
		if _, keep := args.Secrets[key]; keep {
			continue
		}
		if err := client.DeleteSecret(ctx, key); err != nil {
			// The put succeeded: record it, keep the keys not yet pruned.
			state.AppSecretsArgs, state.ValuesHash = args, args.valuesHash()
			state.Keys = union(slices.Sorted(maps.Keys(args.Secrets)), prior.Keys)
			return state, fmt.Errorf("pruning secret %s: %w", key, err)
		}
	}
	state.AppSecretsArgs = args
	state.Keys = slices.Sorted(maps.Keys(args.Secrets))
	state.ValuesHash = args.valuesHash()
	state.Missing = nil
	return state, nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, k := range b {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Read lists the store's keys and records managed keys that went missing.
func (*AppSecrets) Read(ctx context.Context, req infer.ReadRequest[AppSecretsArgs, AppSecretsState]) (infer.ReadResponse[AppSecretsArgs, AppSecretsState], error) {
	state := req.State
	if state.ServiceSecret == "" {
		return infer.ReadResponse[AppSecretsArgs, AppSecretsState]{}, fmt.Errorf(
			"AppSecrets cannot be imported: the store is write-only; declare the resource and run pulumi up")
	}
	client, err := state.client()
	if err != nil {
		return infer.ReadResponse[AppSecretsArgs, AppSecretsState]{}, err
	}
	present, err := client.ListSecrets(ctx)
	if controlplane.IsNotFound(err) {
		return infer.ReadResponse[AppSecretsArgs, AppSecretsState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[AppSecretsArgs, AppSecretsState]{}, err
	}
	state.Missing = nil
	for _, k := range state.Keys {
		if !slices.Contains(present, k) {
			state.Missing = append(state.Missing, k)
		}
	}
	return infer.ReadResponse[AppSecretsArgs, AppSecretsState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete removes only the keys this resource set. A control plane that is
// already gone has nothing left to clean.
func (*AppSecrets) Delete(ctx context.Context, req infer.DeleteRequest[AppSecretsState]) (infer.DeleteResponse, error) {
	client, err := req.State.client()
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	for _, key := range req.State.Keys {
		if err := client.DeleteSecret(ctx, key); err != nil {
			return infer.DeleteResponse{}, fmt.Errorf("deleting secret %s: %w", key, err)
		}
	}
	return infer.DeleteResponse{}, nil
}
