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

	"github.com/openinspect/pulumi-openinspect/provider/platform"
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
}

// givenSecrets lists every secret input the spec sets, in field order.
func (s *spec) givenSecrets() []givenSecret {
	var out []givenSecret
	add := func(path string, v pulumi.StringInput, rule func(v string) string) {
		if v != nil {
			out = append(out, givenSecret{path, v, rule})
		}
	}
	a := s.OpenInspectArgs
	add("githubApp.privateKey", a.GithubApp.PrivateKey, nil)
	add("anthropicApiKey", a.AnthropicAPIKey, nil)
	add("browserAuthSecret", a.BrowserAuthSecret, browserAuthSecretProblem)
	add("tokenEncryptionKey", a.TokenEncryptionKey, nil)
	add("repoSecretsEncryptionKey", a.RepoSecretsEncryptionKey, encryptionKeyProblem)
	add("providerAccountsEncryptionKey", a.ProviderAccountsEncryptionKey, encryptionKeyProblem)
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
	for i, w := range a.Workers {
		for _, k := range slices.Sorted(maps.Keys(w.Secrets)) {
			add(fmt.Sprintf("workers[%d].secrets.%s", i, k), w.Secrets[k], nil)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.AppSecrets)) {
		key := k
		add("appSecrets."+k, a.AppSecrets[k], func(v string) string { return platform.AppSecretValueProblem(key, v) })
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
