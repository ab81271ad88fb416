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
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/opencomputerapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/vercelapi"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// Stage 2: everything that needs no expansion, checked before any resource
// is registered. Every problem is reported, each with its field path.

var (
	modalEnvironmentPattern = regexp.MustCompile(`^[^:/\\]+$`)
	webSuffixPattern        = regexp.MustCompile(`^[a-z0-9-]*$`)
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
		errs.add("deploymentName", "required")
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
		errs.add("githubApp.appId", "required")
	}
	if strings.TrimSpace(s.GithubApp.InstallationID) == "" {
		errs.add("githubApp.installationId", "required")
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
	errs = append(errs, upstreamGates(s)...)
	errs = append(errs, varSizeProblems(s)...)
	if t := s.TakeOverFrom; t != nil && !tenant.IsInstallationID(*t) {
		errs.add("takeOverFrom", "%q is not an installation identity: give the other installation's installationId "+
			"(oi and 32 hex digits, from its NameLock's state or the ownership message that named it)", *t)
	}
	// The default origin is made of the name parts: when they are invalid,
	// their own problem is the one to fix.
	namesValid := logicalNamePattern.MatchString(s.DeploymentName) && logicalNamePattern.MatchString(s.Prefix)
	if !s.WebFromWorker && (!s.WebOriginIsDefault || namesValid) && !validWebOrigin(s.WebOrigin) {
		errs.add(s.WebOriginField, "%q must be an https origin, or http on localhost, 127.0.0.1 or [::1]: the control plane refuses anything else", s.WebOrigin)
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
	if m := s.Media; m != nil {
		if problem := cloudflare.R2LocationProblem(family.Deref(m.Location, "")); problem != "" {
			errs.add("media.location", "%s", problem)
		}
		if name := family.Deref(m.BucketName, ""); name != "" {
			if problem := cloudflare.R2BucketNameProblem(name); problem != "" {
				errs.add("media.bucketName", "%s", problem)
			}
		}
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
	if !slices.Contains([]string{"modal", "daytona", "e2b", "vercel", "opencomputer"}, s.SandboxProvider) {
		errs.add("sandbox.provider", "must be modal, daytona, e2b, vercel or opencomputer, got %q", s.SandboxProvider)
	}
	if (s.managesModal() || s.buildsSnapshot() || s.buildsE2BTemplate() || s.buildsOpenComputerSnapshot() || s.buildsVercelSnapshot()) &&
		family.Deref(s.Upstream.Checkout, "") == "" {
		errs.add("upstream.checkout", "required to deploy the %s sandbox side (its sources are read from the checkout); "+
			"set it, or set sandbox.manage to false", s.SandboxProvider)
	}
	if env := s.configModalEnvironment; s.managesModal() && family.Deref(s.Modal.Environment, "") == "" && env != "" &&
		(strings.TrimSpace(env) == "" || !modalEnvironmentPattern.MatchString(env)) {
		errs.add("sandbox.modal.environment", "unset, so the provider's openinspect:modalEnvironment %q is used, which Modal refuses: "+
			"it must be non-blank without ':', '/' or '\\'; set sandbox.modal.environment or fix the provider setting", env)
	}
	if s.Sandbox == nil {
		return errs
	}
	if t := s.Sandbox.InactivityTimeoutMs; t != nil && *t <= 0 {
		errs.add("sandbox.inactivityTimeoutMs", "must be positive, got %d", *t)
	}
	if s.Sandbox.Modal != nil {
		if env := family.Deref(s.Modal.Environment, "main"); !modalEnvironmentPattern.MatchString(env) || strings.TrimSpace(env) == "" {
			errs.add("sandbox.modal.environment", "%q must be non-blank without ':', '/' or '\\'", env)
		}
		if sfx := family.Deref(s.Modal.EnvironmentWebSuffix, ""); !webSuffixPattern.MatchString(sfx) {
			errs.add("sandbox.modal.environmentWebSuffix", "%q: use lower-case letters, digits and '-'", sfx)
		}
		if s.managesModal() {
			// The deployed app reports both; a given value could only disagree.
			if s.Modal.Workspace != nil {
				errs.add("sandbox.modal.workspace", "the managed Modal app reports its workspace; remove it, or set sandbox.manage to false")
			}
			if s.Modal.EnvironmentWebSuffix != nil {
				errs.add("sandbox.modal.environmentWebSuffix", "the managed Modal app reports its web suffix; remove it, or set sandbox.manage to false")
			}
		}
	}
	if s.SandboxProvider == "daytona" {
		d := s.Daytona
		if u := family.Deref(d.APIURL, ""); u == "" {
			errs.add("sandbox.daytona.apiUrl", "required with the daytona provider")
		} else if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
			errs.add("sandbox.daytona.apiUrl", "%q is not an http(s) URL", u)
		}
		if d.APIKey == nil {
			errs.add("sandbox.daytona.apiKey", "required with the daytona provider")
		}
		if !s.ManageSandbox && family.Deref(d.BaseSnapshot, "") == "" {
			errs.add("sandbox.daytona.baseSnapshot", "required when sandbox.manage is false (otherwise the installation builds its own)")
		}
		if g := d.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
			errs.add("sandbox.daytona.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
		}
	}
	if s.SandboxProvider == "e2b" {
		errs = append(errs, validateE2B(s)...)
	}
	if s.SandboxProvider == "opencomputer" {
		errs = append(errs, validateOpenComputer(s)...)
	}
	if s.SandboxProvider == "vercel" {
		errs = append(errs, validateVercel(s)...)
	}
	return errs
}

// validateVercel checks the Vercel Sandbox settings the build and the
// control plane share.
func validateVercel(s *spec) problems {
	var errs problems
	x := s.Vercel
	if x.Token == nil {
		errs.add("sandbox.vercel.token", "required with the vercel provider (the base-snapshot build and the control plane both use it)")
	}
	if strings.TrimSpace(family.Deref(x.ProjectID, "")) == "" {
		errs.add("sandbox.vercel.projectId", "required with the vercel provider (every Sandbox API call is scoped by project)")
	}
	if u := family.Deref(x.APIURL, ""); u != "" {
		if err := vercelapi.CheckAPIURL(u); err != nil {
			errs.add("sandbox.vercel.apiUrl", "%v", err)
		}
	}
	if r := x.Runtime; r != nil && !slices.Contains(sandbox.VercelRuntimes, *r) {
		errs.add("sandbox.vercel.runtime", "%q: one of %s", *r, strings.Join(sandbox.VercelRuntimes, ", "))
	}
	if e := x.SnapshotExpirationMs; e != nil && *e < 0 {
		errs.add("sandbox.vercel.snapshotExpirationMs", "must be 0 (never) or more, got %d", *e)
	}
	if !s.ManageSandbox && family.Deref(x.BaseSnapshotID, "") == "" {
		errs.add("sandbox.vercel.baseSnapshotId", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if g := x.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.vercel.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

// validateOpenComputer checks the OpenComputer settings the build and the
// control plane share.
func validateOpenComputer(s *spec) problems {
	var errs problems
	o := s.OpenComputer
	if u := family.Deref(o.APIURL, ""); u == "" {
		errs.add("sandbox.opencomputer.apiUrl", "required with the opencomputer provider, ending in /api (e.g. https://app.opencomputer.dev/api)")
	} else if err := opencomputerapi.CheckAPIURL(u); err != nil {
		errs.add("sandbox.opencomputer.apiUrl", "%v", err)
	}
	if o.APIKey == nil {
		errs.add("sandbox.opencomputer.apiKey", "required with the opencomputer provider (the snapshot build and the control plane both use it)")
	}
	if !s.ManageSandbox && family.Deref(o.Template, "") == "" {
		errs.add("sandbox.opencomputer.template", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if m := o.BuilderMemoryMB; m != nil && *m < 1024 {
		errs.add("sandbox.opencomputer.builderMemoryMb", "must be at least 1024, got %d", *m)
	}
	if g := o.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.opencomputer.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

// validateE2B checks the E2B settings the build and the control plane share.
func validateE2B(s *spec) problems {
	var errs problems
	e := s.E2B
	if u := family.Deref(e.APIURL, ""); u != "" {
		if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
			errs.add("sandbox.e2b.apiUrl", "%q is not an http(s) URL", u)
		}
	}
	if e.APIKey == nil {
		errs.add("sandbox.e2b.apiKey", "required with the e2b provider (the template build and the control plane both use it)")
	}
	if !s.ManageSandbox && family.Deref(e.TemplateID, "") == "" {
		errs.add("sandbox.e2b.templateId", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if c := e.CPU; c != nil && (*c < 1 || *c > 8) {
		errs.add("sandbox.e2b.cpu", "must be between 1 and 8, got %d", *c)
	}
	if m := e.MemoryMB; m != nil && (*m < 512 || *m%2 != 0) {
		errs.add("sandbox.e2b.memoryMb", "must be an even number of at least 512, got %d", *m)
	}
	if g := e.TemplateGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.e2b.templateGracePeriodSeconds", "must be 0 or more, got %d", *g)
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
