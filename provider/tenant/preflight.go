package tenant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/restjson"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/daytonaapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/e2bapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/opencomputerapi"
	sandboxvercel "github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/vercelapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
)

// The preflight: what an installation will need from its credentials and
// from this machine, verified by its NameLock before any child that
// depends on the lock is touched. Every child depends on the lock, so a
// wrong token, an account the token cannot reach, a Vercel project name
// someone else holds, a sandbox backend's wrong key or a missing Python
// fails the preview (the lock's
// create is previewed) and, with `up --skip-preview`, the lock's create,
// instead of the first write of a half-built installation. The checks are
// reads (one or two per credential) or local; they run when the lock is
// created and, for the parts that changed, when it is updated, so an
// unchanged installation's preview calls nothing.

// Preflight lists what the lock verifies.
type Preflight struct {
	Cloudflare bool                `pulumi:"cloudflare,optional"`
	Python     bool                `pulumi:"python,optional"`
	Modal      *ModalPreflight     `pulumi:"modal,optional"`
	VercelWeb  *VercelWebPreflight `pulumi:"vercelWeb,optional"`
	Sandbox    *SandboxPreflight   `pulumi:"sandbox,optional"`
}

// ModalPreflight is the Modal environment the installation deploys into.
type ModalPreflight struct {
	// Field sets the environment (sandbox.modal.environment), "" when it
	// is the provider's modalEnvironment.
	Field       string `pulumi:"field,optional"`
	Environment string `pulumi:"environment,optional"`
}

// VercelWebPreflight is the Vercel project the web goes to.
type VercelWebPreflight struct {
	Token         string `pulumi:"token" provider:"secret"`
	TeamID        string `pulumi:"teamId"`
	ProjectName   string `pulumi:"projectName"`
	APIURL        string `pulumi:"apiUrl,optional"`
	AdoptExisting bool   `pulumi:"adoptExisting,optional"`
}

// SandboxPreflight is the sandbox backend's credential (Modal's is
// ModalPreflight): the key the image build and the control plane share.
type SandboxPreflight struct {
	// Provider is the backend: daytona, e2b, opencomputer or vercel.
	Provider string `pulumi:"provider"`
	// Key is sandbox.<provider>.apiKey, sandbox.vercel.token for vercel.
	Key       string `pulumi:"key" provider:"secret"`
	APIURL    string `pulumi:"apiUrl,optional"`
	TeamID    string `pulumi:"teamId,optional"`
	ProjectID string `pulumi:"projectId,optional"`
}

// Annotate documents the type.
func (f *Preflight) Annotate(a infer.Annotator) {
	a.Describe(f, "What the lock verifies, with reads and local checks only, before any child is touched: "+
		"when it is created and, for what changed, when it is updated.")
	a.Describe(&f.Cloudflare, "Check the configured Cloudflare account ID's form and that the token reaches the account (one read).")
	a.Describe(&f.Python, "Check that a Python the Modal deploy and the Daytona and E2B builds can run with is found (openinspect:pythonPath); no call.")
	a.Describe(&f.Modal, "Check that Modal accepts the token and has the environment (one read).")
	a.Describe(&f.VercelWeb, "Check that Vercel accepts the token in the team and that the project name is free or may be taken over (one or two reads).")
	a.Describe(&f.Sandbox, "Check that the sandbox backend (Daytona, E2B, OpenComputer or Vercel Sandbox) accepts its key, "+
		"and for Vercel Sandbox that the team and project are the token's (one read).")
}

// Annotate documents the type.
func (s *SandboxPreflight) Annotate(a infer.Annotator) {
	a.Describe(s, "The sandbox backend's credential, shared by its image build and the control plane.")
	a.Describe(&s.Provider, "The backend: daytona, e2b, opencomputer or vercel.")
	a.Describe(&s.Key, "Its API key (sandbox.<provider>.apiKey), for vercel its token (sandbox.vercel.token).")
	a.Describe(&s.APIURL, "Its API URL (sandbox.<provider>.apiUrl); empty means the backend's public API.")
	a.Describe(&s.TeamID, "For vercel, the team (sandbox.vercel.teamId); empty means the token's own scope.")
	a.Describe(&s.ProjectID, "For vercel, the project (sandbox.vercel.projectId).")
}

// Annotate documents the type.
func (m *ModalPreflight) Annotate(a infer.Annotator) {
	a.Describe(m, "The Modal environment an installation deploys into.")
	a.Describe(&m.Field, "The field that sets the environment, named when Modal lacks it; empty for openinspect:modalEnvironment.")
	a.Describe(&m.Environment, "The environment; empty means openinspect:modalEnvironment, else the workspace's default.")
}

// Annotate documents the type.
func (v *VercelWebPreflight) Annotate(a infer.Annotator) {
	a.Describe(v, "The Vercel project the web UI goes to.")
	a.Describe(&v.Token, "The Vercel token (web.vercel.token).")
	a.Describe(&v.TeamID, "The team (web.vercel.teamId).")
	a.Describe(&v.ProjectName, "The project's name (web.vercel.projectName).")
	a.Describe(&v.APIURL, "The Vercel API URL; empty means the public API.")
	a.Describe(&v.AdoptExisting, "Whether an existing project of that name may be taken over.")
}

// cloudflareAccountID is the form of a Cloudflare account ID.
var cloudflareAccountID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Cloudflare's error code for a token that may not act on the account.
const cfUnauthorizedAccount = 9109

// runPreflight verifies what f lists, each part only when changed is nil
// (a create) or the part differs from changed's. Every problem is
// returned at once, each naming its configuration key or field and what
// to set; a read that fails for another reason is the error.
func runPreflight(ctx context.Context, f *Preflight, had *Preflight) error {
	if f == nil {
		return nil
	}
	var was Preflight
	if had != nil {
		was = *had
	}
	var problems []string
	add := func(p string) {
		if p != "" {
			problems = append(problems, p)
		}
	}
	cfg := config.FromContext(ctx)
	if f.Cloudflare && !was.Cloudflare {
		p, err := checkCloudflare(ctx, cfg)
		if err != nil {
			return err
		}
		add(p)
	}
	if f.Python && !was.Python {
		add(checkPython(cfg))
	}
	if f.Modal != nil && (was.Modal == nil || *f.Modal != *was.Modal) {
		p, err := checkModal(ctx, cfg, *f.Modal)
		if err != nil {
			return err
		}
		add(p)
	}
	if v := f.VercelWeb; v != nil && v.Token != "" && (was.VercelWeb == nil || *v != *was.VercelWeb) {
		p, err := checkVercelWeb(ctx, *v)
		if err != nil {
			return err
		}
		add(p)
	}
	if sb := f.Sandbox; sb != nil && sb.Key != "" && (was.Sandbox == nil || *sb != *was.Sandbox) {
		p, err := checkSandbox(ctx, *sb)
		if err != nil {
			return err
		}
		add(p)
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

// checkCloudflare refuses, with no call, an account ID that is not one
// and, with one read of the account (its workers.dev subdomain), a token
// Cloudflare refuses or that cannot reach the account.
func checkCloudflare(ctx context.Context, cfg *config.Config) (string, error) {
	client, err := cfg.CloudflareClient()
	if err != nil {
		return err.Error(), nil
	}
	account := client.AccountID()
	if !cloudflareAccountID.MatchString(account) {
		return fmt.Sprintf("openinspect:cloudflareAccountId (or CLOUDFLARE_ACCOUNT_ID): %s is not a Cloudflare account ID, "+
			"which is 32 lower-case hex digits: set it to the Account ID the Cloudflare dashboard shows for the account", quoteShort(account)), nil
	}
	_, err = client.AccountSubdomain(ctx)
	var apiErr *cfapi.APIError
	switch {
	case err == nil:
		return "", nil
	case cfapi.HasCode(err, cfUnauthorizedAccount):
		return fmt.Sprintf("openinspect:cloudflareAccountId (or CLOUDFLARE_ACCOUNT_ID): the API token cannot reach account %s (%v): "+
			"set it to the token's account, or use a token of this account", account, err), nil
	case errors.As(err, &apiErr) && (apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden ||
		apiErr.StatusCode == http.StatusBadRequest):
		return fmt.Sprintf("openinspect:cloudflareApiToken (or CLOUDFLARE_API_TOKEN): Cloudflare refused the token (%v): "+
			"set it to an API token of account %s with Workers Scripts, D1, KV, R2 and Queues edit permissions", err, account), nil
	default:
		return "", fmt.Errorf("checking openinspect:cloudflareApiToken against account %s: %w", account, err)
	}
}

// checkPython finds the interpreter the Modal deploy and the Daytona and
// E2B builds run with; no call.
func checkPython(cfg *config.Config) string {
	if _, err := cfg.Python(); err != nil {
		return fmt.Sprintf("%s (or %s): the sandbox's Modal deploy or image build runs with Python %s or newer: %v: set %s to the path of one",
			pyfind.ConfigKey, pyfind.EnvVar, pyfind.Min, err, pyfind.ConfigKey)
	}
	return ""
}

// checkModal reads the environment (a lookup; nothing is created), which
// Modal answers only for a token it accepts.
func checkModal(ctx context.Context, cfg *config.Config, m ModalPreflight) (string, error) {
	client, err := cfg.ModalClient(m.Environment)
	if err != nil {
		return err.Error(), nil
	}
	defer func() { _ = client.Close() }()
	_, err = client.Environment(ctx)
	field := m.Field
	if field == "" || m.Environment == "" {
		field = "openinspect:modalEnvironment (or MODAL_ENVIRONMENT)"
	}
	env := cfg.ModalEnvironmentOr(m.Environment)
	switch {
	case err == nil:
		return "", nil
	case modalapi.Unauthenticated(err):
		return fmt.Sprintf("openinspect:modalTokenId and openinspect:modalTokenSecret (or MODAL_TOKEN_ID and MODAL_TOKEN_SECRET): "+
			"Modal refused the token (%v): set them to a token of the workspace the app deploys into (modal token new)", err), nil
	case modalapi.InvalidArgument(err) && env != "":
		return fmt.Sprintf("%s: Modal refuses the environment name %s (%v): set %s to the name of an environment of the workspace",
			field, quoteShort(env), err, field), nil
	case modalapi.NotFound(err) && env != "":
		return fmt.Sprintf("%s: the token's workspace has no Modal environment %s: create it (modal environment create %s) "+
			"or set %s to an existing one", field, quoteShort(env), quoteShort(env), field), nil
	default:
		return "", fmt.Errorf("checking the Modal token and environment: %w", err)
	}
}

// checkVercelWeb reads the project by name in the team: Vercel answers
// 401 for a token it refuses and 403 for a team the token has no access
// to. A project that exists holding variables or deployments is refused
// unless it may be taken over, as the VercelProject's create would refuse
// it once the rest of the installation exists.
func checkVercelWeb(ctx context.Context, v VercelWebPreflight) (string, error) {
	client, err := vercelapi.New(v.APIURL, v.Token, v.TeamID)
	if err != nil {
		return "web.vercel.token: " + err.Error(), nil
	}
	proj, err := client.GetProject(ctx, v.ProjectName)
	var re *restjson.Error
	switch {
	case errors.Is(err, vercelapi.ErrNotFound):
		return "", nil
	case errors.As(err, &re) && re.Status == http.StatusUnauthorized:
		return fmt.Sprintf("web.vercel.token: Vercel refused the token (%s): set it to a token of team %s (vercel.com/account/tokens)",
			re.Message, v.TeamID), nil
	case errors.As(err, &re) && re.Status == http.StatusForbidden:
		return fmt.Sprintf("web.vercel.teamId: the token has no access to team %s (%s): set teamId to the token's team, "+
			"or web.vercel.token to a token of this team", v.TeamID, re.Message), nil
	case err != nil:
		return "", fmt.Errorf("checking web.vercel.token against team %s: %w", v.TeamID, err)
	case v.AdoptExisting:
		return "", nil
	}
	if len(proj.LatestDeployments) == 0 {
		envs, err := client.ListEnv(ctx, proj.ID)
		if err != nil {
			return "", fmt.Errorf("reading the variables of Vercel project %s: %w", v.ProjectName, err)
		}
		if len(envs) == 0 {
			return "", nil // an empty project is taken over, as a create that died leaves it
		}
	}
	return fmt.Sprintf("web.vercel.projectName: team %s already has a project named %s (%s) with variables or deployments: "+
		"set web.vercel.projectName to a free name, or adoptExisting to take it over", v.TeamID, quoteShort(v.ProjectName), proj.ID), nil
}

// sandboxProviders are the backends SandboxPreflight checks.
var sandboxProviders = []string{"daytona", "e2b", "opencomputer", "vercel"}

// checkSandbox reads, once, what the backend answers only for a key it
// accepts. A refusal names the key's field and where to get a right one;
// the key itself is never quoted (the clients' errors carry none). The
// component refuses a plain-http API URL to another host in its
// validation; a lock declared alone is held to the same rule here, before
// the key is sent.
func checkSandbox(ctx context.Context, s SandboxPreflight) (string, error) {
	if p := loopback.PlainHTTPProblem(s.APIURL, "key"); p != "" {
		return "preflight.sandbox.apiUrl: " + p, nil
	}
	switch s.Provider {
	case "daytona":
		return checkDaytona(ctx, s)
	case "e2b", "opencomputer":
		return checkKeyedREST(ctx, s)
	case "vercel":
		return checkVercelSandbox(ctx, s)
	default:
		return fmt.Sprintf("preflight.sandbox.provider: %s is not a sandbox backend the lock checks: use one of %s",
			quoteShort(s.Provider), strings.Join(sandboxProviders, ", ")), nil
	}
}

// checkDaytona lists one snapshot of the key's organization.
func checkDaytona(ctx context.Context, s SandboxPreflight) (string, error) {
	client, err := daytonaapi.New(daytonaapi.Options{APIKey: s.Key, APIURL: s.APIURL})
	if err != nil {
		return "", fmt.Errorf("checking sandbox.daytona.apiKey: %w", err)
	}
	api := orDefault(s.APIURL, daytonaapi.DefaultAPIURL)
	err = client.CheckKey(ctx)
	switch {
	case err == nil:
		return "", nil
	case daytonaapi.Refused(err):
		return fmt.Sprintf("sandbox.daytona.apiKey: Daytona at %s refused the API key (%v): set it to an API key of the organization "+
			"the sandboxes run in, with snapshot and sandbox permissions (Daytona dashboard, Keys)", api, err), nil
	default:
		return "", fmt.Errorf("checking sandbox.daytona.apiKey against %s: %w", api, err)
	}
}

// checkKeyedREST lists the team's E2B templates or the organization's
// OpenComputer snapshots: both APIs answer 401 for a key they do not know.
func checkKeyedREST(ctx context.Context, s SandboxPreflight) (string, error) {
	var (
		api, where string
		list       func(context.Context) error
	)
	switch s.Provider {
	case "e2b":
		api, where = "E2B", "the team the template is built in (E2B dashboard, API Keys)"
		client, err := e2bapi.New(s.APIURL, s.Key)
		if err != nil {
			return "", fmt.Errorf("checking sandbox.e2b.apiKey: %w", err)
		}
		list = func(ctx context.Context) error { _, err := client.Templates(ctx); return err }
		s.APIURL = orDefault(s.APIURL, e2bapi.DefaultAPIURL)
	default:
		api, where = "OpenComputer", "the organization the snapshot is built in"
		client, err := opencomputerapi.New(s.APIURL, s.Key)
		if err != nil {
			return "", fmt.Errorf("checking sandbox.opencomputer.apiKey: %w", err)
		}
		list = func(ctx context.Context) error { _, err := client.Snapshots(ctx); return err }
	}
	field := "sandbox." + s.Provider + ".apiKey"
	err := list(ctx)
	var re *restjson.Error
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden):
		return fmt.Sprintf("%s: %s at %s refused the API key (%d %s): set it to an API key of %s",
			field, api, s.APIURL, re.Status, re.Message, where), nil
	default:
		return "", fmt.Errorf("checking %s against %s: %w", field, s.APIURL, err)
	}
}

// checkVercelSandbox reads the project the sandboxes run in: Vercel
// answers 401 for a token it refuses, 403 for a team the token has no
// access to and 404 for a project the team (or, without one, the token's
// own scope) lacks.
func checkVercelSandbox(ctx context.Context, s SandboxPreflight) (string, error) {
	client, err := sandboxvercel.New(s.APIURL, s.Key, s.ProjectID, s.TeamID)
	if err != nil {
		return "", fmt.Errorf("checking sandbox.vercel: %w", err)
	}
	scope := "the token's own scope"
	if s.TeamID != "" {
		scope = "team " + s.TeamID
	}
	err = client.CheckProject(ctx)
	var re *restjson.Error
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &re) && re.Status == http.StatusUnauthorized,
		errors.As(err, &re) && re.Status == http.StatusForbidden && s.TeamID == "":
		return fmt.Sprintf("sandbox.vercel.token: Vercel refused the token (%s): set it to a token of the team that owns project %s "+
			"(vercel.com/account/tokens)", re.Message, quoteShort(s.ProjectID)), nil
	case errors.As(err, &re) && re.Status == http.StatusForbidden:
		return fmt.Sprintf("sandbox.vercel.teamId: the token has no access to team %s (%s): set teamId to the token's team, "+
			"or sandbox.vercel.token to a token of this team", s.TeamID, re.Message), nil
	case errors.As(err, &re) && re.Status == http.StatusNotFound:
		return fmt.Sprintf("sandbox.vercel.projectId: Vercel has no project %s in %s (%s): set projectId to the ID of a project of %s "+
			"(its Settings page shows it), or sandbox.vercel.teamId to the team that owns it", quoteShort(s.ProjectID), scope, re.Message, scope), nil
	default:
		return "", fmt.Errorf("checking sandbox.vercel.token and projectId against %s: %w", scope, err)
	}
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// quoteShort quotes s, cut to 64 characters: a value given by mistake may
// be long.
func quoteShort(s string) string {
	if r := []rune(s); len(r) > 64 {
		return fmt.Sprintf("%q… (%d characters)", string(r[:64]), len(r))
	}
	return fmt.Sprintf("%q", s)
}

// preflightEqual reports whether a and b list the same checks.
func preflightEqual(a, b *Preflight) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cloudflare == b.Cloudflare && a.Python == b.Python &&
		ptrEqual(a.Modal, b.Modal) && ptrEqual(a.VercelWeb, b.VercelWeb) && ptrEqual(a.Sandbox, b.Sandbox)
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
