package installation

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cron"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// Stage 2: everything that needs no expansion, checked before any resource
// is registered. Every problem is reported, each with its field path.

var (
	webSuffixPattern = regexp.MustCompile(`^[a-z0-9-]*$`)
	// appSecretKeyPattern is the key rule of upstream's secrets store, before
	// it upper-cases the key.
	appSecretKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,255}$`)
)

func validateSpec(s *spec) []error {
	var errs problems
	checkLogical := func(path, value string) {
		if !logicalNamePattern.MatchString(value) {
			errs.add(path, "%q is not a valid name part: use lower-case letters, digits and '-', starting and ending with a letter or digit", value)
		}
	}
	if s.DeploymentName == "" {
		errs.add("deploymentName", "required: the installation's unique name, the last part of every Cloudflare name "+
			"(lower-case letters, digits and '-', e.g. prod)")
	} else {
		checkLogical("deploymentName", s.DeploymentName)
	}
	if s.NamePrefix != nil {
		checkLogical("namePrefix", *s.NamePrefix)
	}
	if s.DeletionPolicy != "Delete" && s.DeletionPolicy != "Orphan" {
		errs.add("deletionPolicy", "must be Delete or Orphan, got %q", s.DeletionPolicy)
	}
	if strings.TrimSpace(s.GithubApp.AppID) == "" {
		errs.add("githubApp.appId", "required: the GitHub App's numeric App ID, from the App's settings page")
	}
	if strings.TrimSpace(s.GithubApp.InstallationID) == "" {
		errs.add("githubApp.installationId", "required: the numeric ID of the App's installation, the last part of its settings URL")
	}
	for _, secret := range []struct {
		path  string
		value pulumi.StringInput
	}{
		{"githubApp.privateKey", s.GithubApp.PrivateKey},
		{"anthropicApiKey", s.AnthropicAPIKey},
		{"browserAuthSecret", s.BrowserAuthSecret},
		{"tokenEncryptionKey", s.TokenEncryptionKey},
		{"repoSecretsEncryptionKey", s.RepoSecretsEncryptionKey},
	} {
		if secret.value == nil {
			errs.add(secret.path, "required (a secret with no value)")
		}
	}
	for _, o := range []struct {
		path  string
		oauth *OAuthArgs
	}{{"githubOAuth", s.GithubOAuth}, {"googleOAuth", s.GoogleOAuth}} {
		if o.oauth == nil {
			continue
		}
		if strings.TrimSpace(o.oauth.ClientID) == "" {
			errs.add(o.path+".clientId", "required: sign-in needs both the client ID and the client secret")
		}
		if o.oauth.ClientSecret == nil {
			errs.add(o.path+".clientSecret", "required: sign-in needs both the client ID and the client secret")
		}
	}
	errs = append(errs, validateSandbox(s)...)
	errs = append(errs, inputProblems(s)...)
	errs = append(errs, upstreamGates(s)...)
	errs = append(errs, varSizeProblems(s)...)
	errs = append(errs, sandboxAPIURLProblems(s)...)
	// Given, even empty, it must be an identity: "" would silently take
	// over nothing.
	if s.OpenInspectArgs.TakeOverFrom != nil && !tenant.IsInstallationID(s.TakeOverFrom) {
		errs.add("takeOverFrom", "%q is not an installation identity: give the other installation's installationId "+
			"(oi and 32 hex digits, from its NameLock's state or the ownership message that named it)", s.TakeOverFrom)
	}
	// The default origin is made of the name parts: when they are invalid,
	// their own problem is the one to fix.
	namesValid := logicalNamePattern.MatchString(s.DeploymentName) && logicalNamePattern.MatchString(s.Prefix)
	if !s.WebFromWorker && !s.WebFromVercel && (!s.WebOriginIsDefault || namesValid) && !validWebOrigin(s.WebOrigin) {
		if s.WebOriginField != "web.customDomain.hostname" && s.WebOriginField != "web.vercel.domain" {
			// A custom domain's origin is https://<hostname>: web.Validate
			// reports the hostname as written, not a URL the user never wrote.
			errs.add(s.WebOriginField, "%q must be an https origin, or http on localhost, 127.0.0.1 or [::1]: the control plane refuses anything else", s.WebOrigin)
		}
	}
	for _, list := range []struct {
		path  string
		names []string
	}{{"kvNamespaces", s.KvNamespaces}, {"r2Buckets", s.R2Buckets}, {"queues", s.Queues}} {
		for i, n := range list.names {
			checkLogical(fmt.Sprintf("%s[%d]", list.path, i), n)
		}
	}
	seen := map[string]int{}
	for i, w := range s.Workers {
		path := fmt.Sprintf("workers[%d]", i)
		checkLogical(path+".name", w.Name)
		if j, dup := seen[w.Name]; dup {
			errs.add(path+".name", "duplicate worker name %q (also workers[%d])", w.Name, j)
		}
		seen[w.Name] = i
		// Keys are checked even when the values are unknown (a preview of
		// secrets other resources compute): the map itself is never secret.
		for _, k := range slices.Sorted(maps.Keys(w.Vars)) {
			if problem := cloudflare.BindingNameProblem(k); problem != "" {
				errs.add(keyPath(path+".vars", k), "%s", problem)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(w.Secrets)) {
			problem := cloudflare.BindingNameProblem(k)
			switch {
			case problem != "":
				errs.add(keyPath(path+".secrets", k), "%s", problem)
			case w.Secrets[k] == nil:
				errs.add(keyPath(path+".secrets", k), "secret %s has no value", k)
			}
			// An invalid name is reported once, above.
			if _, both := w.Vars[k]; both && problem == "" {
				errs.add(keyPath(path+".secrets", k), "%s is also set in %s.vars: a name is either a var or a secret", k, path)
			}
		}
		for j, c := range w.Crons {
			if err := cron.Validate(c); err != nil {
				errs.add(fmt.Sprintf("%s.crons[%d]", path, j), "%v", err)
			}
		}
	}
	errs.addIf("media.location", cloudflare.R2LocationProblem(s.MediaLocation))
	if name := s.MediaBucketName; name != "" {
		errs.addIf("media.bucketName", cloudflare.R2BucketNameProblem(name))
	}
	if len(s.AppSecrets) > tenant.MaxAppSecrets {
		errs.add("appSecrets", "%d secrets given; the store holds at most %d", len(s.AppSecrets), tenant.MaxAppSecrets)
	}
	stored := map[string]string{} // the store's name -> the key given
	for _, k := range slices.Sorted(maps.Keys(s.AppSecrets)) {
		name := tenant.AppSecretName(k)
		switch problem := tenant.AppSecretKeyProblem(name); {
		case !appSecretKeyPattern.MatchString(k):
			errs.add(keyPath("appSecrets", k), "%q is not a valid secret name: use letters, digits and '_', not starting with a digit, "+
				"at most 256 characters (the store upper-cases it)", k)
		case problem != "" && name != k:
			errs.add(keyPath("appSecrets", k), "%s (the store upper-cases %s to %s)", problem, k, name)
		case problem != "":
			errs.add(keyPath("appSecrets", k), "%s", problem)
		case stored[name] != "":
			errs.add(keyPath("appSecrets", k), "names the same secret as appSecrets.%s: the store upper-cases names, so both are %s", stored[name], name)
		case s.AppSecrets[k] == nil:
			errs.add(keyPath("appSecrets", k), "secret %s has no value", k)
		}
		if stored[name] == "" {
			stored[name] = k
		}
	}
	if s.Web != nil {
		errs = append(errs, web.Validate("web", s.Web)...)
	}
	return errs
}

func validateSandbox(s *spec) problems {
	var errs problems
	if !slices.Contains(sandboxProviders, s.SandboxProvider) {
		errs.add("sandbox.provider", "must be modal, daytona, e2b, vercel or opencomputer, got %q", s.SandboxProvider)
	}
	if s.buildsSandbox() && s.Upstream.Checkout == "" {
		errs.add("upstream.checkout", "required to deploy the %s sandbox side (its sources are read from the checkout); "+
			"set it, or set sandbox.manage to false", s.SandboxProvider)
	}
	if s.Sandbox != nil {
		if t := s.Sandbox.InactivityTimeoutMs; t != nil && *t <= 0 {
			errs.add("sandbox.inactivityTimeoutMs", "must be positive, got %d", *t)
		}
	}
	for _, name := range sandboxProviders {
		errs = append(errs, sandboxBackends[name].validate(s)...)
	}
	return errs
}

// validWebOrigin is the control plane's rule for WEB_APP_URL.
func validWebOrigin(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		return slices.Contains([]string{"localhost", "127.0.0.1", "::1"}, u.Hostname())
	}
	return false
}
