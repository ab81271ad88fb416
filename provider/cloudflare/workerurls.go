package cloudflare

import (
	"context"
	"fmt"
	"slices"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
)

// WorkerUrls says where scripts with workers.dev enabled will answer, before
// they exist. A worker's own URL (WORKER_URL, the bots' CONTROL_PLANE_URL)
// cannot come from the worker's outputs without a cycle, so the component asks
// this resource instead. It reads the account's workers.dev subdomain once, on
// create and refresh; a preview or an update costs no Cloudflare call.
type WorkerUrls struct{}

// WorkerUrlsArgs are the inputs of WorkerUrls.
type WorkerUrlsArgs struct {
	Scripts []string `pulumi:"scripts"`
}

// WorkerUrlsState is what WorkerUrls records.
type WorkerUrlsState struct {
	WorkerUrlsArgs
	Subdomain string            `pulumi:"subdomain"`
	BaseURL   string            `pulumi:"baseUrl"`
	Urls      map[string]string `pulumi:"urls"`
	// fromRecord is set when Urls were computed from a subdomain or base
	// already read (an update, or a create that read it), so a preview
	// can show them: see WireDependencies.
	fromRecord bool
}

var (
	_ infer.CustomUpdate[WorkerUrlsArgs, WorkerUrlsState]         = (*WorkerUrls)(nil)
	_ infer.CustomRead[WorkerUrlsArgs, WorkerUrlsState]           = (*WorkerUrls)(nil)
	_ infer.ExplicitDependencies[WorkerUrlsArgs, WorkerUrlsState] = (*WorkerUrls)(nil)
)

// WireDependencies keeps the URLs known at the preview of an update: it
// computes them from the recorded subdomain, as the update will, so a
// worker added to an installation (a new script in the list) does not make
// every other worker's URL, and each var that carries one (WORKER_URL, the
// bots' CONTROL_PLANE_URL), read as unknown, a change that will not happen.
// A create's preview has read nothing yet, and its URLs stay unknown.
func (*WorkerUrls) WireDependencies(f infer.FieldSelector, _ *WorkerUrlsArgs, state *WorkerUrlsState) {
	if state.fromRecord {
		f.OutputField(&state.Urls).AlwaysKnown()
		f.OutputField(&state.Subdomain).AlwaysKnown()
		f.OutputField(&state.BaseURL).AlwaysKnown()
	}
}

// Annotate documents the resource.
func (r *WorkerUrls) Annotate(a infer.Annotator) {
	a.Describe(r, "The URLs workers will answer on (https://<script>.<account subdomain>.workers.dev, or "+
		"the provider's workersDevBaseUrl with its * replaced by the script name, or <workersDevBaseUrl>/<script> for a base "+
		"without one), known before the workers exist. Reads the account's "+
		"workers.dev subdomain on create and refresh only.")
}

// Annotate documents the inputs.
func (a *WorkerUrlsArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Scripts, "Script names.")
}

// Annotate documents the outputs.
func (s *WorkerUrlsState) Annotate(a infer.Annotator) {
	a.Describe(&s.Subdomain, "The account's workers.dev subdomain; empty when workersDevBaseUrl is set.")
	a.Describe(&s.BaseURL, "The provider's workersDevBaseUrl, when set.")
	a.Describe(&s.Urls, "URL by script name.")
}

// Create reads the subdomain and computes the URLs.
func (*WorkerUrls) Create(ctx context.Context, req infer.CreateRequest[WorkerUrlsArgs]) (infer.CreateResponse[WorkerUrlsState], error) {
	state := WorkerUrlsState{WorkerUrlsArgs: req.Inputs}
	if req.DryRun {
		return infer.CreateResponse[WorkerUrlsState]{Output: state}, nil
	}
	if err := state.lookUp(ctx); err != nil {
		return infer.CreateResponse[WorkerUrlsState]{}, err
	}
	state.fill()
	return infer.CreateResponse[WorkerUrlsState]{ID: "worker-urls", Output: state}, nil
}

// Update recomputes the URLs from what was read before: no call.
func (*WorkerUrls) Update(_ context.Context, req infer.UpdateRequest[WorkerUrlsArgs, WorkerUrlsState]) (infer.UpdateResponse[WorkerUrlsState], error) {
	state := req.State
	state.WorkerUrlsArgs = req.Inputs
	state.fill()
	state.fromRecord = true
	return infer.UpdateResponse[WorkerUrlsState]{Output: state}, nil
}

// Read reads the subdomain again, so a refresh notices a renamed account subdomain.
func (*WorkerUrls) Read(ctx context.Context, req infer.ReadRequest[WorkerUrlsArgs, WorkerUrlsState]) (infer.ReadResponse[WorkerUrlsArgs, WorkerUrlsState], error) {
	state := req.State
	if err := state.lookUp(ctx); err != nil {
		return infer.ReadResponse[WorkerUrlsArgs, WorkerUrlsState]{}, err
	}
	state.fill()
	return infer.ReadResponse[WorkerUrlsArgs, WorkerUrlsState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

func (s *WorkerUrlsState) lookUp(ctx context.Context) error {
	cfg := config.FromContext(ctx)
	s.BaseURL = cfg.WorkersDevBase()
	s.Subdomain = ""
	if s.BaseURL != "" {
		return nil
	}
	client, err := cfg.CloudflareClient()
	if err != nil {
		return err
	}
	sub, err := client.AccountSubdomain(ctx)
	if err != nil {
		return fmt.Errorf("reading the account's workers.dev subdomain: %w", err)
	}
	if sub == "" {
		return fmt.Errorf("the Cloudflare account has no workers.dev subdomain yet: choose one in the dashboard (Workers & Pages) so workers get URLs")
	}
	s.Subdomain = sub
	return nil
}

func (s *WorkerUrlsState) fill() {
	s.Urls = make(map[string]string, len(s.Scripts))
	for _, script := range slices.Compact(slices.Sorted(slices.Values(s.Scripts))) {
		s.Urls[script] = cfapi.WorkersDevURL(s.BaseURL, s.Subdomain, script)
	}
}
