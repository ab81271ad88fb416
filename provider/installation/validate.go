package installation

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cron"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/platform"
)

// fieldError is a problem with one input, named by its path.
func fieldError(path, format string, a ...any) error {
	return fmt.Errorf("%s: %s", path, fmt.Sprintf(format, a...))
}

var (
	modalEnvironmentPattern = regexp.MustCompile(`^[^:/\\]+$`)
	webSuffixPattern        = regexp.MustCompile(`^[a-z0-9-]*$`)
)

// validateArgs checks everything that needs no expansion, before any
// resource is registered. It reports every problem, each with its field path.
func validateArgs(a *OpenInspectArgs) []error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, fieldError(path, format, args...)) }
	checkLogical := func(path, value string) {
		if !logicalNamePattern.MatchString(value) {
			bad(path, "%q is not a valid name part: use lower-case letters, digits and '-', starting and ending with a letter or digit", value)
		}
	}
	if a.DeploymentName == "" {
		bad("deploymentName", "required")
	} else {
		checkLogical("deploymentName", a.DeploymentName)
	}
	if a.NamePrefix != nil {
		checkLogical("namePrefix", *a.NamePrefix)
	}
	if p := common.Deref(a.DeletionPolicy, "Delete"); p != "Delete" && p != "Orphan" {
		bad("deletionPolicy", "must be Delete or Orphan, got %q", p)
	}
	if strings.TrimSpace(a.GithubApp.AppID) == "" {
		bad("githubApp.appId", "required")
	}
	if strings.TrimSpace(a.GithubApp.InstallationID) == "" {
		bad("githubApp.installationId", "required")
	}
	for _, s := range []struct {
		path  string
		value pulumi.StringInput
	}{
		{"githubApp.privateKey", a.GithubApp.PrivateKey},
		{"anthropicApiKey", a.AnthropicAPIKey},
		{"browserAuthSecret", a.BrowserAuthSecret},
		{"tokenEncryptionKey", a.TokenEncryptionKey},
		{"repoSecretsEncryptionKey", a.RepoSecretsEncryptionKey},
	} {
		if s.value == nil {
			bad(s.path, "required (a secret with no value)")
		}
	}
	for _, o := range []struct {
		path  string
		oauth *OAuthArgs
	}{{"githubOAuth", a.GithubOAuth}, {"googleOAuth", a.GoogleOAuth}} {
		if o.oauth == nil {
			continue
		}
		if strings.TrimSpace(o.oauth.ClientID) == "" {
			bad(o.path+".clientId", "required: sign-in needs both the client ID and the client secret")
		}
		if o.oauth.ClientSecret == nil {
			bad(o.path+".clientSecret", "required: sign-in needs both the client ID and the client secret")
		}
	}
	errs = append(errs, validateSandbox(a)...)
	if u := a.webAppURL(common.Deref(a.NamePrefix, defaultNamePrefix)); !validWebOrigin(u) {
		path := "webAppUrl"
		if a.WebAppURL == nil && a.Web != nil {
			path = "web.publicUrl"
		}
		bad(path, "%q must be an https origin, or http on localhost, 127.0.0.1 or [::1]: the control plane refuses anything else", u)
	}
	for _, list := range []struct {
		path  string
		names []string
	}{{"kvNamespaces", a.KvNamespaces}, {"r2Buckets", a.R2Buckets}, {"queues", a.Queues}} {
		for i, n := range list.names {
			checkLogical(fmt.Sprintf("%s[%d]", list.path, i), n)
		}
	}
	seen := map[string]int{}
	for i, w := range a.Workers {
		path := fmt.Sprintf("workers[%d]", i)
		checkLogical(path+".name", w.Name)
		if j, dup := seen[w.Name]; dup {
			bad(path+".name", "duplicate worker name %q (also workers[%d])", w.Name, j)
		}
		seen[w.Name] = i
		for _, k := range slices.Sorted(maps.Keys(w.Secrets)) {
			if w.Secrets[k] == nil {
				bad(path+".secrets."+k, "secret %s has no value", k)
			}
		}
		for _, c := range w.Crons {
			if err := cron.Validate(c); err != nil {
				bad(path+".crons", "%v", err)
			}
		}
	}
	if len(a.AppSecrets) > platform.MaxAppSecrets {
		bad("appSecrets", "%d secrets given; the store holds at most %d", len(a.AppSecrets), platform.MaxAppSecrets)
	}
	for _, k := range slices.Sorted(maps.Keys(a.AppSecrets)) {
		if problem := platform.AppSecretKeyProblem(k); problem != "" {
			bad("appSecrets."+k, "%s", problem)
		} else if a.AppSecrets[k] == nil {
			bad("appSecrets."+k, "secret %s has no value", k)
		}
	}
	if a.Web != nil {
		errs = append(errs, web.Validate("web", a.Web)...)
	}
	return errs
}

func validateSandbox(a *OpenInspectArgs) []error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, fieldError(path, format, args...)) }
	provider := a.sandboxProvider()
	if provider != "modal" && provider != "daytona" {
		bad("sandbox.provider", "must be modal or daytona, got %q", provider)
	}
	s := a.Sandbox
	if s == nil {
		return errs
	}
	if s.InactivityTimeoutMs != nil && *s.InactivityTimeoutMs <= 0 {
		bad("sandbox.inactivityTimeoutMs", "must be positive, got %d", *s.InactivityTimeoutMs)
	}
	if m := s.Modal; m != nil {
		if env := common.Deref(m.Environment, "main"); !modalEnvironmentPattern.MatchString(env) {
			bad("sandbox.modal.environment", "%q must be non-empty without ':', '/' or '\\'", env)
		}
		if sfx := common.Deref(m.EnvironmentWebSuffix, ""); !webSuffixPattern.MatchString(sfx) {
			bad("sandbox.modal.environmentWebSuffix", "%q: use lower-case letters, digits and '-'", sfx)
		}
	}
	if provider == "daytona" {
		d := s.Daytona
		if d == nil {
			d = &DaytonaArgs{}
		}
		if u := common.Deref(d.APIURL, ""); u == "" {
			bad("sandbox.daytona.apiUrl", "required with the daytona provider")
		} else if parsed, err := url.Parse(u); err != nil || parsed.Host == "" || (parsed.Scheme != "https" && parsed.Scheme != "http") {
			bad("sandbox.daytona.apiUrl", "%q is not an http(s) URL", u)
		}
		if d.APIKey == nil {
			bad("sandbox.daytona.apiKey", "required with the daytona provider")
		}
		if common.Deref(d.BaseSnapshot, "") == "" {
			bad("sandbox.daytona.baseSnapshot", "required with the daytona provider")
		}
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

// validatePlan checks what needs the expansion: name lengths, clashes with
// upstream's resources, and that every binding of the spec names something
// this installation has.
func validatePlan(plan *installPlan, a *OpenInspectArgs) []error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, fieldError(path, format, args...)) }
	names := []string{plan.D1Name}
	for _, list := range [][]plannedResource{plan.KV, plan.R2, plan.Queues} {
		for _, r := range list {
			names = append(names, r.Name)
		}
	}
	for _, w := range plan.Workers {
		names = append(names, w.Name)
	}
	for _, n := range names {
		if len(n) > maxNameLength {
			bad("deploymentName", "the name %q is %d characters; Cloudflare allows %d: shorten namePrefix or deploymentName", n, len(n), maxNameLength)
		}
	}
	logicals := func(list []plannedResource) []string {
		out := make([]string, 0, len(list))
		for _, r := range list {
			out = append(out, r.Logical)
		}
		return out
	}
	for _, list := range []struct {
		path  string
		extra []string
		all   []string
	}{
		{"kvNamespaces", a.KvNamespaces, logicals(plan.KV)},
		{"r2Buckets", a.R2Buckets, logicals(plan.R2)},
		{"queues", a.Queues, logicals(plan.Queues)},
	} {
		for i, n := range list.extra {
			if count := len(slices.DeleteFunc(slices.Clone(list.all), func(x string) bool { return x != n })); count > 1 {
				bad(fmt.Sprintf("%s[%d]", list.path, i), "%q is already part of the installation", n)
			}
		}
	}
	if a.Web != nil {
		for i, ps := range a.Web.ImagePullSecrets {
			if ps.Name == plan.resourceName("web") {
				bad(fmt.Sprintf("web.imagePullSecrets[%d].name", i), "%q is also the name of the web's own Secret; "+
					"the copy would collide with it", ps.Name)
			}
		}
	}
	workers := make([]string, 0, len(plan.Workers))
	for _, w := range plan.Workers {
		workers = append(workers, w.Logical)
	}
	for i, spec := range a.Workers {
		if spec.Bindings == nil {
			continue
		}
		base := fmt.Sprintf("workers[%d].bindings", i)
		b := spec.Bindings
		for _, kind := range []struct {
			field, noun, hint string
			list              []LogicalBinding
			known             []string
			def               string
		}{
			{"d1", "D1 database", "the installation has one D1 database, \"main\"", b.D1, []string{mainDatabase}, mainDatabase},
			{"kv", "KV namespace", "add it to kvNamespaces", b.Kv, logicals(plan.KV), ""},
			{"r2", "R2 bucket", "add it to r2Buckets", b.R2, logicals(plan.R2), ""},
			{"queues", "queue", "add it to queues", b.Queues, logicals(plan.Queues), ""},
			{"services", "worker", "enable that bot or add it to workers", b.Services, workers, ""},
		} {
			for j, lb := range kind.list {
				path := fmt.Sprintf("%s.%s[%d]", base, kind.field, j)
				if lb.Binding == "" {
					bad(path+".binding", "required")
				}
				target := common.Deref(lb.Target, kind.def)
				switch {
				case target == "":
					bad(path+".target", "required: the logical name of the %s", kind.noun)
				case !slices.Contains(kind.known, target):
					bad(path+".target", "no %s %q in this installation (%s; it has %s)", kind.noun, target, kind.hint, quoteList(kind.known))
				}
			}
		}
		for j, lb := range b.DurableObjects {
			path := fmt.Sprintf("%s.durableObjects[%d]", base, j)
			if lb.Binding == "" {
				bad(path+".binding", "required")
			}
			if common.Deref(lb.Target, "") == "" {
				bad(path+".target", "required: the Durable Object class the worker exports")
			}
		}
	}
	return errs
}

func quoteList(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(quoted, ", ")
}

// resolveArtifacts finds each worker's bundle and the migrations directory,
// verifies what it can, and says how to build what is missing.
func resolveArtifacts(c *upstream.Contract, plan *installPlan, a *OpenInspectArgs) []error {
	var errs []error
	bad := func(path, format string, args ...any) { errs = append(errs, fieldError(path, format, args...)) }
	up := a.Upstream
	if up == nil {
		up = &UpstreamArgs{}
	}
	checkout := common.Deref(up.Checkout, "")
	if checkout != "" {
		if info, err := os.Stat(checkout); err != nil || !info.IsDir() {
			bad("upstream.checkout", "%q is not a directory", checkout)
			checkout = ""
		} else if head, isGit, err := gitHead(checkout); err != nil {
			bad("upstream.checkout", "reading its git HEAD: %v", err)
		} else if isGit && head != c.Upstream.Commit {
			bad("upstream.checkout", "HEAD is %s but this provider is pinned to %s: `git checkout %s` there and rebuild the bundles", head, c.Upstream.Commit, c.Upstream.Commit)
		}
	}
	for logical := range up.WorkerBundles {
		if plan.worker(logical) == nil {
			bad("upstream.workerBundles."+logical, "no worker %q in this installation", logical)
		}
	}
	specs := map[string]int{}
	for i, w := range a.Workers {
		specs[w.Name] = i
	}
	for _, w := range plan.Workers {
		path, script := "", ""
		cw := c.Worker(w.Logical)
		if i, ok := specs[w.Logical]; ok && a.Workers[i].Script != nil {
			path, script = fmt.Sprintf("workers[%d].script", i), *a.Workers[i].Script
		} else if s, ok := up.WorkerBundles[w.Logical]; ok {
			path, script = "upstream.workerBundles."+w.Logical, s
		} else if checkout != "" && cw != nil {
			path, script = "upstream.checkout", filepath.Join(checkout, filepath.FromSlash(cw.Bundle))
		}
		switch {
		case script == "" && cw != nil:
			bad("upstream", "no bundle for worker %s: set upstream.checkout to an upstream checkout at %s with `%s` run in %s, or upstream.workerBundles.%s",
				w.Logical, c.Upstream.Commit, cw.Build, cw.Package, w.Logical)
		case script == "":
			bad(fmt.Sprintf("workers[%d].script", specs[w.Logical]), "required: %s is not an upstream worker, so its bundle must be given", w.Logical)
		default:
			if info, err := os.Stat(script); err != nil || info.IsDir() {
				how := ""
				if cw != nil {
					how = fmt.Sprintf(": build it with `%s` in %s", cw.Build, cw.Package)
				}
				bad(path, "the bundle %s of worker %s is missing%s", script, w.Logical, how)
			}
			w.Script = script
		}
	}
	dir := common.Deref(up.MigrationsDir, "")
	path := "upstream.migrationsDir"
	if dir == "" && checkout != "" {
		dir, path = filepath.Join(checkout, filepath.FromSlash(c.D1Migrations.Directory)), "upstream.checkout"
	}
	switch {
	case dir == "":
		bad("upstream", "no D1 migrations: set upstream.checkout to an upstream checkout at %s, or upstream.migrationsDir", c.Upstream.Commit)
	default:
		matches, _ := filepath.Glob(filepath.Join(dir, "*.sql"))
		if len(matches) == 0 {
			bad(path, "no migration files (*.sql) in %s", dir)
		}
		plan.MigrationsDir = dir
	}
	return errs
}

// checkDurableObjectClasses refuses a Durable Object binding whose class the
// worker's bundle does not contain: the upload would declare the class in a
// migration and fail. An ES module keeps its exported names, so an exported
// class always appears in the bundle by name.
func checkDurableObjectClasses(plan *installPlan, a *OpenInspectArgs) []error {
	var errs []error
	for _, w := range plan.Workers {
		if len(w.DurableObjects) == 0 || w.Script == "" {
			continue
		}
		bundle, err := os.ReadFile(w.Script)
		if err != nil {
			errs = append(errs, fmt.Errorf("worker %s: reading %s: %w", w.Logical, w.Script, err))
			continue
		}
		for _, b := range w.DurableObjects {
			if regexp.MustCompile(`\b` + regexp.QuoteMeta(b.Target) + `\b`).Match(bundle) {
				continue
			}
			path := "upstream"
			for i, spec := range a.Workers {
				if spec.Name != w.Logical || spec.Bindings == nil {
					continue
				}
				for j, lb := range spec.Bindings.DurableObjects {
					if lb.Binding == b.Binding {
						path = fmt.Sprintf("workers[%d].bindings.durableObjects[%d].target", i, j)
					}
				}
			}
			errs = append(errs, fieldError(path, "the bundle %s of worker %s has no Durable Object class %q for binding %s: export the class, or fix the class name",
				w.Script, w.Logical, b.Target, b.Binding))
		}
	}
	return errs
}

// gitHead reads the commit a git work tree has checked out, without running
// git. isGit is false when dir is not a git work tree.
func gitHead(dir string) (head string, isGit bool, err error) {
	gitDir := filepath.Join(dir, ".git")
	info, err := os.Stat(gitDir)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	} else if err != nil {
		return "", true, err
	}
	if !info.IsDir() { // a worktree: ".git" holds "gitdir: <path>"
		raw, err := os.ReadFile(gitDir)
		if err != nil {
			return "", true, err
		}
		target := strings.TrimSpace(strings.TrimPrefix(string(raw), "gitdir:"))
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		gitDir = target
	}
	raw, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", true, err
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(raw)), "ref: ")
	if !isRef {
		return ref, true, nil
	}
	// A symbolic ref: loose file first, then packed-refs (also in the common
	// dir of a worktree).
	dirs := []string{gitDir}
	if common, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(common))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		dirs = append(dirs, c)
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return strings.TrimSpace(string(b)), true, nil
		}
		if f, err := os.Open(filepath.Join(d, "packed-refs")); err == nil {
			scanner := bufio.NewScanner(f)
			for scanner.Scan() {
				if hash, name, ok := strings.Cut(scanner.Text(), " "); ok && name == ref {
					f.Close()
					return hash, true, nil
				}
			}
			f.Close()
		}
	}
	return "", true, fmt.Errorf("%s points at %s, which has no commit yet", filepath.Join(gitDir, "HEAD"), ref)
}
