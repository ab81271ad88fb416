package installation

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// Stage 2c: inputs that deployed as given (or were refused only once
// remote objects existed) although their value can never work: checked
// with the spec, before anything is registered. Each message quotes only
// what the user wrote.

var (
	// numericID is a GitHub App's or installation's ID: a positive integer.
	numericID = regexp.MustCompile(`^[1-9][0-9]*$`)
	// daytonaSnapshotName is the name rule of Daytona's snapshot API
	// (image-like: name[/name...] with an optional digest).
	daytonaSnapshotName = regexp.MustCompile(`^[a-zA-Z0-9_.\-:]+(/[a-zA-Z0-9_.\-:]+)*(@sha256:[a-f0-9]{64})?$`)
	// e2bTemplateName is E2B's template name or ID rule, with an optional tag.
	e2bTemplateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}(:[a-zA-Z0-9._-]{1,128})?$`)
	// sandboxIdentifier is what the other names and IDs a backend takes as
	// given (a Daytona target, an OpenComputer template, Vercel's project,
	// team and snapshot IDs) look like: no spaces, no punctuation beyond
	// '_', '-', '.' and ':'.
	sandboxIdentifier = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]*$`)
)

// maxSandboxName bounds a snapshot or template name given as is: E2B's
// template names are at most 128 characters, and no backend documents a
// longer one.
const maxSandboxName = 128

func inputProblems(s *spec) problems {
	var errs problems
	if u := s.AppIconURL; u != "" {
		if problem := iconURLProblem(u); problem != "" {
			errs.add("appIconUrl", "%s", problem)
		}
	}
	for _, id := range []struct{ path, value string }{
		{"githubApp.appId", s.GithubApp.AppID}, {"githubApp.installationId", s.GithubApp.InstallationID},
	} {
		if v := strings.TrimSpace(id.value); v != "" && !numericID.MatchString(v) {
			errs.add(id.path, "%q is not a GitHub ID: give the number GitHub shows (the App's settings page for the App ID, "+
				"the installation's URL for the installation ID)", id.value)
		}
	}
	for _, d := range strings.Split(s.Access.AllowedEmailDomains, ",") {
		d = strings.TrimSpace(d)
		if strings.ContainsAny(d, "*@ ") {
			errs.add("access.allowedEmailDomains", "%q is not an e-mail domain: entries are matched exactly (example.com), "+
				"so a wildcard or an address admits no one; to admit every authenticated user set access.unsafeAllowAllUsers", d)
		}
	}
	errs = append(errs, sandboxInputProblems(s)...)
	if w := s.Web; w != nil && w.Vercel != nil {
		// The token goes with every call, as a sandbox API key does.
		errs.addIf("web.vercel.apiUrl", loopback.PlainHTTPProblem(s.WebVercel.APIURL, "Vercel token"))
	}
	return errs
}

// iconURLProblem: the web writes appIconUrl into the page's icon link as
// given, so only an http(s) URL or a root-relative path is safe there.
func iconURLProblem(u string) string {
	const want = "use an https URL (https://example.com/logo.png) or a root-relative path (/logo.png)"
	if strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//") {
		if strings.ContainsAny(u, " \t\r\n\\") {
			return fmt.Sprintf("%q holds whitespace or a backslash: %s", u, want)
		}
		return ""
	}
	parsed, err := url.Parse(u)
	if err != nil || (parsed.Scheme != "https" && parsed.Scheme != "http") || parsed.Host == "" {
		return fmt.Sprintf("%q is not an http(s) URL or a root-relative path: %s", u, want)
	}
	return ""
}

// plainHTTPProblem refuses a sandbox API URL over plain http to a host
// other than this machine: the provider and the control plane send the API
// key with every call.
func plainHTTPProblem(u string) string { return loopback.PlainHTTPProblem(u, "API key") }

func sandboxInputProblems(s *spec) problems {
	var errs problems
	if x := s.Sandbox; x != nil {
		given := map[string]bool{"modal": x.Modal != nil, "daytona": x.Daytona != nil, "e2b": x.E2B != nil,
			"opencomputer": x.OpenComputer != nil, "vercel": x.Vercel != nil}
		for _, name := range sandboxProviders {
			if given[name] && name != s.SandboxProvider {
				errs.add("sandbox."+name, "set, but sandbox.provider is %q, so these settings would be ignored: "+
					"remove sandbox.%s, or set sandbox.provider to %s", s.SandboxProvider, name, name)
			}
		}
	}
	name := func(path string, value string, pattern *regexp.Regexp, rule string) {
		switch {
		case value == "":
		case len(value) > maxSandboxName:
			errs.add(path, "is %d characters; at most %d", len(value), maxSandboxName)
		case !pattern.MatchString(value):
			errs.add(path, "%q: use %s", value, rule)
		}
	}
	const identifierRule = "letters, digits, '_', '-', '.' and ':' (no spaces), starting with a letter or digit"
	switch s.SandboxProvider {
	case "daytona":
		name("sandbox.daytona.baseSnapshot", s.Daytona.BaseSnapshot, daytonaSnapshotName,
			"letters, digits, '_', '-', '.' and ':' in '/'-separated parts (no spaces), as Daytona names snapshots")
		name("sandbox.daytona.target", s.Daytona.Target, sandboxIdentifier, identifierRule)
	case "e2b":
		name("sandbox.e2b.templateId", s.E2B.TemplateID, e2bTemplateName,
			"lower-case letters, digits, '_', '-' and '.', with an optional :tag, as E2B names templates")
	case "opencomputer":
		name("sandbox.opencomputer.template", s.OpenComputer.Template, sandboxIdentifier, identifierRule)
	case "vercel":
		name("sandbox.vercel.projectId", s.Vercel.ProjectID, sandboxIdentifier, identifierRule)
		name("sandbox.vercel.teamId", s.Vercel.TeamID, sandboxIdentifier, identifierRule)
		name("sandbox.vercel.baseSnapshotId", s.Vercel.BaseSnapshotID, sandboxIdentifier, identifierRule)
	}
	return errs
}
