package installation

import (
	"context"
	"fmt"
	"net/url"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/opencomputerapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/vercelapi"
)

// A sandbox backend's apiUrl is the one plain setting of the installation
// that may be another resource's output (issue 48): nothing is named or
// planned from it, it only reaches the control plane's vars and the
// sandbox child. Every other plain field is needed as a value at preview
// (inputkinds.go says why, field by field).
//
// It is read once, in normalize. A value known then (always at an up; at a
// preview unless another resource computes it) is checked as a plain value
// would be, before anything is registered. An unknown one (a preview of a
// value not computed yet) is checked when known, at the up; until then
// the control plane's var and the child's apiUrl are unknown too. A plain
// value is planned as a literal, as before; an output is handed to the
// children as the output it is, keeping its dependencies.

// sandboxAPIURL is one backend's apiUrl: the contract input it sets and the
// field of the spec holding it.
type sandboxAPIURL struct {
	provider, contractInput string
	field                   func(*spec) pulumi.StringInput
	// required: the backend has no default API.
	required string
	// rule is the backend's own rule for the URL, "" when it holds.
	rule func(u string) string
}

var sandboxAPIURLs = []sandboxAPIURL{
	{provider: "daytona", contractInput: "daytonaApiUrl", field: func(s *spec) pulumi.StringInput { return s.Daytona.APIURL },
		required: "required with the daytona provider", rule: httpURLProblem},
	{provider: "e2b", contractInput: "e2bApiUrl", field: func(s *spec) pulumi.StringInput { return s.E2B.APIURL },
		rule: httpURLProblem},
	{provider: "opencomputer", contractInput: "opencomputerApiUrl", field: func(s *spec) pulumi.StringInput { return s.OpenComputer.APIURL },
		required: "required with the opencomputer provider, ending in /api (e.g. https://app.opencomputer.dev/api)",
		rule:     func(u string) string { return errText(opencomputerapi.CheckAPIURL(u)) }},
	{provider: "vercel", contractInput: "vercelSandboxApiBaseUrl", field: func(s *spec) pulumi.StringInput { return s.Vercel.APIURL },
		rule: func(u string) string { return errText(vercelapi.CheckAPIURL(u)) }},
}

// path is the component's field.
func (u sandboxAPIURL) path() string { return "sandbox." + u.provider + ".apiUrl" }

// givenString is a string input as read when the installation is planned.
type givenString struct {
	// input is the input as given; nil when the field is not set.
	input pulumi.StringInput
	// known: the value is known now; value is it.
	known bool
	value string
	// secret: the value is a secret; dependent: it is another resource's
	// output.
	secret, dependent bool
	// err is why reading it failed (an upstream output's own error).
	err error
}

// readString awaits in. Inputs arrive resolved (known or not) in the
// engine's request, and a Go program's own output resolves once the
// resource computing it is registered, so this waits for no deployment.
func readString(ctx context.Context, in pulumi.StringInput) givenString {
	g := givenString{input: in}
	if in == nil {
		return g
	}
	res, err := internals.UnsafeAwaitOutput(ctx, in.ToStringOutput())
	g.err, g.known, g.secret, g.dependent = err, res.Known, res.Secret, len(res.Dependencies) > 0
	if err == nil && res.Known {
		g.value, _ = res.Value.(string)
	}
	return g
}

// plain: a value known now that is neither a secret nor another resource's
// output, which is planned as a literal like any plain field.
func (g givenString) plain() bool {
	return g.input != nil && g.err == nil && g.known && !g.secret && !g.dependent
}

// set: the field is given a value that may be non-empty (an unknown one
// counts).
func (g givenString) set() bool { return g.input != nil && (!g.known || g.value != "") }

// readSandboxAPIURLs reads every backend's apiUrl, by provider.
func readSandboxAPIURLs(ctx context.Context, s *spec) map[string]givenString {
	out := map[string]givenString{}
	for _, u := range sandboxAPIURLs {
		out[u.provider] = readString(ctx, u.field(s))
	}
	return out
}

// apiURL is the apiUrl of the provider's settings.
func (s *spec) apiURL(provider string) givenString { return s.apiURLs[provider] }

// sandboxAPIURLProblems checks the apiUrl of the chosen provider: required
// where the backend has no default, its backend's URL rule, https unless
// the host is loopback, and Cloudflare's limit on one Worker var (it
// becomes the control plane's var). A value not known yet is checked at
// the up; a secret is refused, as it could not stay one.
func sandboxAPIURLProblems(s *spec) problems {
	var errs problems
	for _, u := range sandboxAPIURLs {
		if u.provider != s.SandboxProvider {
			continue // other providers' settings are refused as ignored
		}
		g := s.apiURL(u.provider)
		switch {
		case g.err != nil:
			// The error of an upstream output is the user's own.
			errs.add(u.path(), "reading the value: %v", g.err)
		case g.secret:
			errs.add(u.path(), "must not be a secret: it becomes the control plane's plain-text var %s (a var in upstream "+
				"too) and the sandbox child's API URL, where a secret could not stay one; give the URL as a plain value or "+
				"as another resource's output that is not secret", controlPlaneAPIURLVar[u.provider])
		case !g.set():
			if u.required != "" {
				errs.add(u.path(), "%s", u.required)
			}
		case g.known:
			errs.addIf(u.path(), u.rule(g.value))
			errs.addIf(u.path(), plainHTTPProblem(g.value))
			if limit := s.workerLimits().MaxVarBytes; len(g.value) > limit {
				errs.add(u.path(), "%d bytes: over Cloudflare's %s limit for one Worker var", len(g.value), config.FormatSize(int64(limit)))
			}
		}
	}
	return errs
}

// controlPlaneAPIURLVar is the control plane's var each apiUrl becomes
// (the contract's controlPlaneVars).
var controlPlaneAPIURLVar = map[string]string{"daytona": "DAYTONA_API_URL", "e2b": "E2B_API_URL",
	"opencomputer": "OPENCOMPUTER_API_URL", "vercel": "VERCEL_SANDBOX_API_BASE_URL"}

// httpURLProblem: the URL must be http(s) with a host.
func httpURLProblem(u string) string {
	if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
		return fmt.Sprintf("%q is not an http(s) URL", u)
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// unknownValue stands for a value another resource computes while the
// contract's conditions are evaluated at a preview: set, of no value.
const unknownValue = "\x00unknown"

// apiURLContractInputs are the apiUrls as the planner takes them: plain
// values as literals, the others (outputs) by contract input, with the
// value conditions are evaluated on (unknownValue when not known yet).
func (s *spec) apiURLContractInputs() (plain map[string]string, outputs map[string]pulumi.StringInput, conditions map[string]string) {
	plain, outputs, conditions = map[string]string{}, map[string]pulumi.StringInput{}, map[string]string{}
	for _, u := range sandboxAPIURLs {
		switch g := s.apiURL(u.provider); {
		case g.input == nil:
		case g.plain():
			plain[u.contractInput] = g.value
		default:
			outputs[u.contractInput] = g.input
			conditions[u.contractInput] = unknownValue
			if g.known {
				conditions[u.contractInput] = g.value
			}
		}
	}
	return plain, outputs, conditions
}

// apiURLInput is the provider's apiUrl as a sandbox child's input: nil when
// not set (the child then uses its default), the value for a plain one,
// the output as given otherwise.
func (b *installer) apiURLInput(provider string) pulumi.StringInput {
	g := b.spec.apiURL(provider)
	switch {
	case !g.set():
		return nil
	case g.plain():
		return pulumi.String(g.value)
	}
	return g.input.ToStringOutput()
}

// preflightAPIURL is the provider's apiUrl for the lock's key check: its
// value when known now (nil when not set: the backend's default). ok is
// false while it is another resource's output not known yet (a preview):
// the check then waits for the up, where the value is known, rather than
// sending the key to the backend's default URL.
func (b *installer) preflightAPIURL(provider string) (url *string, ok bool) {
	g := b.spec.apiURL(provider)
	switch {
	case !g.set():
		return nil, true
	case !g.known || g.err != nil:
		return nil, false
	}
	return &g.value, true
}
