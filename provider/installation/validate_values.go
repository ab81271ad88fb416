package installation

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// Stage 2b: the values of the secrets the user gave. They arrive as Pulumi
// secrets (outputs), so their structure is checked in validateSpec and their
// values here, awaited where known. An unknown value (a preview of a value
// another resource computes) is skipped; it is checked again at the update.
// No message ever quotes a value.

// givenSecret is one secret input with its field path and the rule its value
// follows beyond being non-blank.
type givenSecret struct {
	path  string
	value pulumi.StringInput
	rule  func(v string) string
	// store: the value goes to the control plane's secrets store, not into
	// a Worker secret, so the Workers limit on one value does not apply.
	store bool
}

// givenSecrets lists every secret input the spec sets, in field order.
func (s *spec) givenSecrets() []givenSecret {
	var out []givenSecret
	add := func(path string, v pulumi.StringInput, rule func(v string) string) {
		if v != nil {
			out = append(out, givenSecret{path: path, value: v, rule: rule})
		}
	}
	a := s.OpenInspectArgs
	add("githubApp.privateKey", a.GithubApp.PrivateKey, nil)
	add("anthropicApiKey", a.AnthropicAPIKey, nil)
	add("browserAuthSecret", a.BrowserAuthSecret, browserAuthSecretProblem)
	add("tokenEncryptionKey", a.TokenEncryptionKey, encryptionKeyProblem)
	add("repoSecretsEncryptionKey", a.RepoSecretsEncryptionKey, encryptionKeyProblem)
	add("providerAccountsEncryptionKey", a.ProviderAccountsEncryptionKey, providerAccountsKeyProblem)
	for _, o := range []struct {
		path  string
		oauth *OAuthArgs
	}{{"githubOAuth", a.GithubOAuth}, {"googleOAuth", a.GoogleOAuth}} {
		if o.oauth != nil {
			add(o.path+".clientSecret", o.oauth.ClientSecret, nil)
		}
	}
	if x := a.Slack; x != nil {
		add("slack.botToken", x.BotToken, nil)
		add("slack.signingSecret", x.SigningSecret, nil)
	}
	if x := a.GithubBot; x != nil {
		add("githubBot.webhookSecret", x.WebhookSecret, nil)
	}
	if x := a.LinearBot; x != nil {
		add("linearBot.clientSecret", x.ClientSecret, nil)
		add("linearBot.webhookSecret", x.WebhookSecret, nil)
		add("linearBot.apiKey", x.APIKey, nil)
	}
	add("sandbox.modal.apiSecret", s.Modal.APISecret, nil)
	add("sandbox.daytona.apiKey", s.Daytona.APIKey, nil)
	add("sandbox.e2b.apiKey", s.E2B.APIKey, nil)
	add("sandbox.opencomputer.apiKey", s.OpenComputer.APIKey, nil)
	add("sandbox.vercel.token", s.Vercel.Token, nil)
	if a.Web != nil && a.Web.Vercel != nil {
		add("web.vercel.token", a.Web.Vercel.Token, nil)
	}
	for i, w := range a.Workers {
		for _, k := range slices.Sorted(maps.Keys(w.Secrets)) {
			add(keyPath(fmt.Sprintf("workers[%d].secrets", i), k), w.Secrets[k], nil)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.AppSecrets)) {
		key := k
		add(keyPath("appSecrets", k), a.AppSecrets[k], func(v string) string { return tenant.AppSecretValueProblem(key, v) })
		out[len(out)-1].store = true
	}
	return out
}

// validateSecretValues awaits each known secret value and checks it.
func validateSecretValues(ctx context.Context, s *spec) []error {
	var errs problems
	for _, g := range s.givenSecrets() {
		v, known, err := awaitString(ctx, g.value)
		if err != nil {
			// The error of an upstream output is the user's own; it carries
			// no value of this input.
			errs.add(g.path, "reading the value: %v", err)
			continue
		}
		if !known {
			continue
		}
		if problem := secretValueProblem(g, v); problem != "" {
			errs.add(g.path, "%s", problem)
		} else if max := s.workerLimits().MaxVarBytes; !g.store && len(v) > max {
			// Every secret input but appSecrets becomes a Worker secret. The
			// size is not quoted: it is a hint about the value.
			errs.add(g.path, "the value is over Cloudflare's %s limit for one Worker secret", config.FormatSize(int64(max)))
		}
	}
	if total := appSecretsTotal(ctx, s); total > tenant.MaxAppSecretsTotal {
		errs.add("appSecrets", "the values together are over the store's %s limit for one scope", config.FormatSize(tenant.MaxAppSecretsTotal))
	}
	return errs
}

// appSecretsTotal is the size of the appSecrets values known now.
func appSecretsTotal(ctx context.Context, s *spec) int64 {
	var total int64
	for _, v := range s.AppSecrets {
		if v == nil {
			continue
		}
		if value, known, err := awaitString(ctx, v); err == nil && known {
			total += int64(len(value))
		}
	}
	return total
}

// plainValue is a plain (not secret) input that becomes a Worker var.
type plainValue struct{ path, value string }

// workerVarInputs lists the plain inputs that reach a Worker as a var
// (absent ones as "", which fits any limit).
func (s *spec) workerVarInputs() []plainValue {
	var out []plainValue
	add := func(path, v string) { out = append(out, plainValue{path, v}) }
	add("appName", s.AppName)
	add("githubApp.appId", s.GithubApp.AppID)
	add("githubApp.installationId", s.GithubApp.InstallationID)
	add("access.allowedUsers", s.Access.AllowedUsers)
	add("access.allowedEmailDomains", s.Access.AllowedEmailDomains)
	add("access.allowedEmails", s.Access.AllowedEmails)
	add("access.allowedGithubOrgs", s.Access.AllowedGithubOrgs)
	for _, o := range []struct {
		path  string
		oauth *OAuthArgs
	}{{"githubOAuth", s.GithubOAuth}, {"googleOAuth", s.GoogleOAuth}} {
		if o.oauth != nil {
			add(o.path+".clientId", o.oauth.ClientID)
		}
	}
	add("githubBot.username", s.GithubBotUsername)
	add("linearBot.clientId", s.LinearBotClientID)
	if w := s.Modal.Workspace; w != nil {
		add("sandbox.modal.workspace", *w)
	}
	add("sandbox.daytona.baseSnapshot", s.Daytona.BaseSnapshot)
	add("sandbox.daytona.target", s.Daytona.Target)
	add("sandbox.e2b.templateId", s.E2B.TemplateID)
	add("sandbox.opencomputer.template", s.OpenComputer.Template)
	add("sandbox.vercel.projectId", s.Vercel.ProjectID)
	add("sandbox.vercel.teamId", s.Vercel.TeamID)
	add("sandbox.vercel.baseSnapshotId", s.Vercel.BaseSnapshotID)
	if !s.WebOriginIsDefault {
		add(s.WebOriginField, s.WebOrigin)
	}
	for i, w := range s.Workers {
		for _, k := range slices.Sorted(maps.Keys(w.Vars)) {
			add(keyPath(fmt.Sprintf("workers[%d].vars", i), k), w.Vars[k])
		}
	}
	return out
}

// varSizeProblems refuses a plain value over Cloudflare's limit for one
// Worker var, which the Worker child would only refuse after the resources
// registered before it exist.
func varSizeProblems(s *spec) problems {
	var errs problems
	max := s.workerLimits().MaxVarBytes
	for _, v := range s.workerVarInputs() {
		if len(v.value) > max {
			errs.add(v.path, "%d bytes: over Cloudflare's %s limit for one Worker var", len(v.value), config.FormatSize(int64(max)))
		}
	}
	return errs
}

// secretValueProblem applies the rules to one known value.
func secretValueProblem(g givenSecret, v string) string {
	if strings.TrimSpace(v) == "" {
		what := "empty"
		if v != "" {
			what = "only whitespace"
		}
		return fmt.Sprintf("the secret is %s: give its value, or leave the input out where it is optional", what)
	}
	if g.rule != nil {
		return g.rule(v)
	}
	return ""
}

// awaitString resolves a string input: its value and whether it is known.
func awaitString(ctx context.Context, in pulumi.StringInput) (string, bool, error) {
	res, err := internals.UnsafeAwaitOutput(ctx, in.ToStringOutput())
	if err != nil || !res.Known {
		return "", false, err
	}
	v, _ := res.Value.(string)
	return v, true, nil
}

// providerAccountsKeyProblem: upstream's Terraform takes the provider-accounts
// key only as padded standard base64 of exactly 32 bytes, and its control
// plane refuses any other length when it first encrypts an account.
func providerAccountsKeyProblem(v string) string {
	if problem := encryptionKeyProblem(v); problem != "" {
		return problem
	}
	k := strings.TrimSpace(v)
	if raw, err := base64.StdEncoding.DecodeString(k); err != nil || len(raw) != 32 {
		return "must be 32 bytes in padded standard base64 (44 characters ending in '='): `openssl rand -base64 32`"
	}
	return ""
}

// browserAuthSecretProblem: upstream's control plane refuses a browser-auth
// secret of fewer than 32 non-whitespace characters (the contract's input).
func browserAuthSecretProblem(v string) string {
	n := 0
	for _, r := range v {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	if n < 32 {
		return fmt.Sprintf("has %d non-whitespace characters; the control plane needs at least 32 (e.g. `openssl rand -base64 32`)", n)
	}
	return ""
}

// encryptionKeyProblem: upstream imports these keys as AES-GCM keys from
// standard base64, so anything but base64 of 16, 24 or 32 bytes fails only
// when the first secret is stored ("Secrets storage unavailable"). The
// contract asks for 32 random bytes.
func encryptionKeyProblem(v string) string {
	k := strings.TrimSpace(v)
	raw, err := base64.StdEncoding.DecodeString(k)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(k)
	}
	switch {
	case err != nil:
		return "is not standard base64: give 32 random bytes in base64 (`openssl rand -base64 32`)"
	case len(raw) != 16 && len(raw) != 24 && len(raw) != 32:
		return fmt.Sprintf("decodes to %d bytes; an AES key is 16, 24 or 32 bytes: give 32 random bytes in base64 (`openssl rand -base64 32`)", len(raw))
	}
	return ""
}
