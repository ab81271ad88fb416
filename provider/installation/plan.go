package installation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

const (
	defaultNamePrefix = "open-inspect"
	// controlPlane is the logical name of the worker every other part talks to.
	controlPlane = "control-plane"
	// mainDatabase is the contract's logical name of the installation's D1 database.
	mainDatabase = "main"
	// maxNameLength bounds every Cloudflare name (queue names and workers.dev labels).
	maxNameLength = 63
)

// secretPlaceholder stands for a secret the user gave while conditions are
// evaluated: structure may depend on whether a secret is set, never on its value.
const secretPlaceholder = "\x00secret"

var logicalNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// refKind says where a var or secret value comes from.
type refKind int

const (
	refLiteral refKind = iota
	refSecretInput
	refGenerated
	refWorkerURL
	refUserSecret
)

// urlForm is which form of a worker URL a value takes.
type urlForm int

const (
	urlFull urlForm = iota
	urlHost
	urlWebSocket
)

// valueRef is one var or secret value in the plan, before resources exist.
type valueRef struct {
	kind refKind
	// text is the literal, the secret input's contract name, the generated
	// secret's name, the logical worker whose URL this is, or the key of a
	// secret the user set on the worker.
	text string
	trim bool
	form urlForm
}

func literal(s string) valueRef { return valueRef{kind: refLiteral, text: s} }

// plannedResource is a KV namespace, R2 bucket or queue of the installation.
type plannedResource struct {
	Logical, Name, Location string
}

// plannedBinding binds a resource by logical name, or a Durable Object class.
type plannedBinding struct {
	Binding, Target string
}

// plannedWorker is one worker with its bindings by logical name and its
// values as references.
type plannedWorker struct {
	Logical, Name, Script                        string
	D1, KV, R2, Queues, Services, DurableObjects []plannedBinding
	Vars, Secrets                                map[string]valueRef
	// UserSecrets are the values of secrets set on the worker entry.
	UserSecrets map[string]pulumi.StringInput
	Crons       []string
	Consumers   []upstream.QueueConsumer
}

// installPlan is the whole installation as plain data: what the component
// registers, in a form tests can compare with the contract.
type installPlan struct {
	Prefix, DeploymentName, Installation string
	AppName, SandboxProvider, WebAppURL  string
	D1Name, MigrationsDir                string
	KV, R2, Queues                       []plannedResource
	Workers                              []*plannedWorker
	// Generated are the generated secrets some value refers to, in contract order.
	Generated []upstream.Generated
	// SecretInputs are the secrets the user gave, by contract input name.
	SecretInputs map[string]pulumi.StringInput

	naming upstream.Naming
}

func (p *installPlan) worker(logical string) *plannedWorker {
	for _, w := range p.Workers {
		if w.Logical == logical {
			return w
		}
	}
	return nil
}

func (p *installPlan) resourceName(logical string) string {
	return p.naming.Name(p.Prefix, logical, p.DeploymentName)
}

// contractInputs maps the component's typed arguments onto the contract's
// input names: plain values rendered as a worker receives them, and secrets
// as given.
func (a *OpenInspectArgs) contractInputs() (map[string]string, map[string]pulumi.StringInput) {
	plain := map[string]string{}
	secrets := map[string]pulumi.StringInput{}
	str := func(name string, v *string) {
		if v != nil {
			plain[name] = *v
		}
	}
	boolean := func(name string, v *bool) {
		if v != nil {
			plain[name] = strconv.FormatBool(*v)
		}
	}
	secret := func(name string, v pulumi.StringInput) {
		if v != nil {
			secrets[name] = v
		}
	}
	if x := a.Access; x != nil {
		str("allowedUsers", x.AllowedUsers)
		str("allowedEmailDomains", x.AllowedEmailDomains)
		str("allowedEmails", x.AllowedEmails)
		str("allowedGithubOrgs", x.AllowedGithubOrgs)
		boolean("unsafeAllowAllUsers", x.UnsafeAllowAllUsers)
	}
	if x := a.GithubOAuth; x != nil {
		plain["githubClientId"] = x.ClientID
		secret("githubClientSecret", x.ClientSecret)
	}
	if x := a.GoogleOAuth; x != nil {
		plain["googleClientId"] = x.ClientID
		secret("googleClientSecret", x.ClientSecret)
	}
	plain["githubAppId"] = a.GithubApp.AppID
	plain["githubAppInstallationId"] = a.GithubApp.InstallationID
	secret("githubAppPrivateKey", a.GithubApp.PrivateKey)
	secret("anthropicApiKey", a.AnthropicAPIKey)
	secret("browserAuthSecret", a.BrowserAuthSecret)
	secret("tokenEncryptionKey", a.TokenEncryptionKey)
	secret("repoSecretsEncryptionKey", a.RepoSecretsEncryptionKey)
	secret("providerAccountsEncryptionKey", a.ProviderAccountsEncryptionKey)
	if x := a.Slack; x != nil {
		boolean("enableSlackBot", x.Enabled)
		boolean("slackTriggersEnabled", x.TriggersEnabled)
		secret("slackBotToken", x.BotToken)
		secret("slackSigningSecret", x.SigningSecret)
	}
	if x := a.GithubBot; x != nil {
		boolean("enableGithubBot", x.Enabled)
		str("githubBotUsername", x.Username)
		secret("githubWebhookSecret", x.WebhookSecret)
	}
	if x := a.LinearBot; x != nil {
		boolean("enableLinearBot", x.Enabled)
		str("linearClientId", x.ClientID)
		secret("linearClientSecret", x.ClientSecret)
		secret("linearWebhookSecret", x.WebhookSecret)
		secret("linearApiKey", x.APIKey)
	}
	if x := a.Sandbox; x != nil {
		if x.InactivityTimeoutMs != nil {
			plain["sandboxInactivityTimeoutMs"] = strconv.Itoa(*x.InactivityTimeoutMs)
		}
		if m := x.Modal; m != nil {
			str("modalWorkspace", m.Workspace)
			str("modalEnvironment", m.Environment)
			secret("modalApiSecret", m.APISecret)
		}
		if d := x.Daytona; d != nil {
			str("daytonaApiUrl", d.APIURL)
			str("daytonaBaseSnapshot", d.BaseSnapshot)
			str("daytonaTarget", d.Target)
			secret("daytonaApiKey", d.APIKey)
		}
	}
	if x := a.Media; x != nil {
		str("r2MediaLocation", x.Location)
		str("r2MediaBucketName", x.BucketName)
	}
	return plain, secrets
}

// sandboxProvider is the chosen provider, modal by default as upstream.
func (a *OpenInspectArgs) sandboxProvider() string {
	if a.Sandbox == nil || a.Sandbox.Provider == nil || *a.Sandbox.Provider == "" {
		return "modal"
	}
	return *a.Sandbox.Provider
}

// webAppURL is the web UI's origin: explicit, else where the web part says it
// serves, else upstream's default Vercel URL.
func (a *OpenInspectArgs) webAppURL(prefix string) string {
	switch {
	case a.WebAppURL != nil && *a.WebAppURL != "":
		return *a.WebAppURL
	case a.Web != nil && a.Web.PublicURL != nil && *a.Web.PublicURL != "":
		return *a.Web.PublicURL
	}
	return fmt.Sprintf("https://%s-%s.vercel.app", prefix, a.DeploymentName)
}

// planner evaluates the contract for one installation.
type planner struct {
	contract *upstream.Contract
	values   upstream.Values
	plan     *installPlan
	// generated collects the generated secrets values refer to.
	generated map[string]bool
}

// buildPlan expands validated arguments into the installation; the
// artifacts (bundles, migrations) are filled in by resolveArtifacts.
func buildPlan(c *upstream.Contract, a *OpenInspectArgs) (*installPlan, error) {
	prefix := common.Deref(a.NamePrefix, defaultNamePrefix)
	plainInputs, secretInputs := a.contractInputs()
	plan := &installPlan{
		Prefix:          prefix,
		DeploymentName:  a.DeploymentName,
		Installation:    prefix + "-" + a.DeploymentName,
		AppName:         common.Deref(a.AppName, ""),
		SandboxProvider: a.sandboxProvider(),
		WebAppURL:       a.webAppURL(prefix),
		SecretInputs:    secretInputs,
		naming:          c.Naming,
	}
	values := c.Defaults()
	maps.Copy(values.Inputs, plainInputs)
	for name := range secretInputs {
		values.Inputs[name] = secretPlaceholder
	}
	values.Derived["deploymentName"] = a.DeploymentName
	values.Derived["sandboxProvider"] = plan.SandboxProvider
	values.Derived["webAppUrl"] = plan.WebAppURL
	if plan.AppName != "" {
		values.Derived["appName"] = plan.AppName
	} else {
		plan.AppName = values.Derived["appName"]
	}
	if a.Sandbox != nil && a.Sandbox.Modal != nil && a.Sandbox.Modal.EnvironmentWebSuffix != nil {
		values.Derived["modalEnvironmentWebSuffix"] = *a.Sandbox.Modal.EnvironmentWebSuffix
	}
	pl := &planner{contract: c, values: values, plan: plan, generated: map[string]bool{}}
	if err := pl.resources(a); err != nil {
		return nil, err
	}
	if err := pl.workers(a); err != nil {
		return nil, err
	}
	for _, g := range c.Generated {
		if pl.generated[g.Name] {
			plan.Generated = append(plan.Generated, g)
		}
	}
	return plan, nil
}

func (pl *planner) holds(when, own string) (bool, error) {
	if when == "" {
		return true, nil
	}
	return pl.contract.Holds(when, pl.values, own)
}

// conditional is a contract entry that exists when its condition holds.
type conditional struct{ logical, when string }

// named expands the contract's entries whose condition holds, then the spec's extras.
func (pl *planner) named(entries []conditional, extras []string) ([]plannedResource, error) {
	var out []plannedResource
	for _, e := range entries {
		ok, err := pl.holds(e.when, "")
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, plannedResource{Logical: e.logical, Name: pl.plan.resourceName(e.logical)})
		}
	}
	for _, logical := range extras {
		out = append(out, plannedResource{Logical: logical, Name: pl.plan.resourceName(logical)})
	}
	return out, nil
}

func (pl *planner) resources(a *OpenInspectArgs) error {
	c, plan := pl.contract, pl.plan
	for _, db := range c.D1Databases {
		if ok, err := pl.holds(db.When, ""); err != nil || !ok {
			return fmt.Errorf("contract: the D1 database is conditional (%q), which the component does not support: %w", db.When, err)
		}
		exception, _ := c.Naming.Exception("d1Database")
		plan.D1Name = strings.NewReplacer("<prefix>", plan.Prefix, "<deploymentName>", plan.DeploymentName).Replace(exception.Pattern)
	}
	var kv, buckets, queues []conditional
	for _, x := range c.KVNamespaces {
		kv = append(kv, conditional{x.Logical, x.When})
	}
	for _, x := range c.R2Buckets {
		buckets = append(buckets, conditional{x.Logical, x.When})
	}
	for _, x := range c.Queues {
		queues = append(queues, conditional{x.Logical, x.When})
	}
	var err error
	if plan.KV, err = pl.named(kv, a.KvNamespaces); err != nil {
		return err
	}
	if plan.Queues, err = pl.named(queues, a.Queues); err != nil {
		return err
	}
	if plan.R2, err = pl.named(buckets, a.R2Buckets); err != nil {
		return err
	}
	// Upstream's buckets may carry a location hint and a full-name override.
	for i := range plan.R2 {
		r := &plan.R2[i]
		for _, b := range c.R2Buckets {
			if b.Logical != r.Logical {
				continue
			}
			if b.NameOverride != nil {
				override, err := c.Resolve(*b.NameOverride, pl.values)
				if err != nil {
					return err
				}
				if override != "" {
					r.Name = override
				}
			}
			if b.LocationHint != nil {
				if r.Location, err = c.Resolve(*b.LocationHint, pl.values); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (pl *planner) workers(a *OpenInspectArgs) error {
	c, plan := pl.contract, pl.plan
	for i := range c.Workers {
		cw := &c.Workers[i]
		ok, err := pl.holds(cw.When, "")
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		w, err := pl.contractWorker(cw)
		if err != nil {
			return fmt.Errorf("contract worker %s: %w", cw.Logical, err)
		}
		plan.Workers = append(plan.Workers, w)
	}
	for _, spec := range a.Workers {
		w := plan.worker(spec.Name)
		if w == nil {
			w = &plannedWorker{Logical: spec.Name, Name: plan.resourceName(spec.Name),
				Vars: map[string]valueRef{}, Secrets: map[string]valueRef{}}
			plan.Workers = append(plan.Workers, w)
		}
		mergeWorker(w, spec)
	}
	return nil
}

// contractWorker expands one upstream worker with the conditions that hold.
func (pl *planner) contractWorker(cw *upstream.Worker) (*plannedWorker, error) {
	w := &plannedWorker{
		Logical: cw.Logical,
		Name:    pl.plan.resourceName(cw.Logical),
		Vars:    map[string]valueRef{},
		Secrets: map[string]valueRef{},
	}
	var bindErr error
	add := func(into *[]plannedBinding, binding, target, when string) {
		if bindErr != nil {
			return
		}
		var ok bool
		if ok, bindErr = pl.holds(when, ""); ok {
			*into = append(*into, plannedBinding{Binding: binding, Target: target})
		}
	}
	b := cw.Bindings
	for _, x := range b.D1 {
		add(&w.D1, x.Binding, x.Database, x.When)
	}
	for _, x := range b.KV {
		add(&w.KV, x.Binding, x.Namespace, x.When)
	}
	for _, x := range b.R2 {
		add(&w.R2, x.Binding, x.Bucket, x.When)
	}
	for _, x := range b.QueueProducers {
		add(&w.Queues, x.Binding, x.Queue, x.When)
	}
	for _, x := range b.Services {
		add(&w.Services, x.Binding, x.Worker, x.When)
	}
	for _, x := range b.DurableObjects {
		add(&w.DurableObjects, x.Binding, x.ClassName, x.When)
	}
	if bindErr != nil {
		return nil, bindErr
	}
	for _, set := range []struct {
		entries []upstream.EnvEntry
		into    map[string]valueRef
	}{{cw.Vars, w.Vars}, {cw.Secrets, w.Secrets}} {
		for _, e := range set.entries {
			own, err := pl.contract.Resolve(e.Source, pl.values)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name, err)
			}
			ok, err := pl.holds(e.When, own)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name, err)
			}
			if !ok {
				continue
			}
			ref, err := pl.ref(e.Source, cw.Logical)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name, err)
			}
			if _, given := pl.plan.SecretInputs[ref.text]; ref.kind == refSecretInput && !given {
				// Upstream binds an optional secret even when empty; Cloudflare
				// rejects an empty secret_text, and the worker reads an unset
				// binding the same way (falsy), so it is left out.
				continue
			}
			set.into[e.Name] = ref
		}
	}
	for _, cron := range cw.Crons {
		w.Crons = append(w.Crons, cron.Schedule)
	}
	for _, qc := range cw.QueueConsumers {
		if pl.plan.hasQueue(qc.Queue) {
			w.Consumers = append(w.Consumers, qc)
		}
	}
	return w, nil
}

func (p *installPlan) hasQueue(logical string) bool {
	return slices.ContainsFunc(p.Queues, func(q plannedResource) bool { return q.Logical == logical })
}

// ref turns a contract source into a value reference. Values the installer
// does not know yet (worker URLs, generated secrets, secrets) stay references.
func (pl *planner) ref(s upstream.Source, worker string) (valueRef, error) {
	c := pl.contract
	switch s.Kind() {
	case upstream.KindValue:
		return literal(*s.Value), nil
	case upstream.KindInput:
		in := c.Input(s.Input)
		if in == nil {
			return valueRef{}, fmt.Errorf("input %q is not declared", s.Input)
		}
		if in.Secret {
			return valueRef{kind: refSecretInput, text: s.Input, trim: s.Trim}, nil
		}
		v, err := c.Resolve(s, pl.values)
		return literal(v), err
	case upstream.KindGenerated:
		pl.generated[s.Generated] = true
		return valueRef{kind: refGenerated, text: s.Generated}, nil
	case upstream.KindDerived:
		switch s.Derived {
		case "controlPlaneUrl":
			return valueRef{kind: refWorkerURL, text: controlPlane, form: urlFull}, nil
		case "controlPlaneHost":
			return valueRef{kind: refWorkerURL, text: controlPlane, form: urlHost}, nil
		case "wsUrl":
			return valueRef{kind: refWorkerURL, text: controlPlane, form: urlWebSocket}, nil
		case "workerUrl":
			target := s.Worker
			if target == "" {
				target = worker
			}
			return valueRef{kind: refWorkerURL, text: target, form: urlFull}, nil
		case "deploymentName", "appName", "sandboxProvider", "webAppUrl", "modalEnvironmentWebSuffix":
			v, err := c.Resolve(s, pl.values)
			return literal(v), err
		}
		return valueRef{}, fmt.Errorf("derived value %q is not supported by the component", s.Derived)
	case upstream.KindFirstOf:
		for _, alt := range s.FirstOf {
			v, err := c.Resolve(alt, pl.values)
			if err != nil {
				return valueRef{}, err
			}
			// Generated and derived values always exist; others count when non-empty.
			if v != "" || alt.Generated != "" || alt.Derived != "" {
				return pl.ref(alt, worker)
			}
		}
		return literal(""), nil
	}
	return valueRef{}, fmt.Errorf("source sets no single kind")
}

// mergeWorker applies a worker entry of the spec: explicit values win over the
// contract's defaults and the sandbox injection.
func mergeWorker(w *plannedWorker, spec InstallationWorkerArgs) {
	if b := spec.Bindings; b != nil {
		for _, m := range []struct {
			into  *[]plannedBinding
			given []LogicalBinding
			def   string
		}{
			{&w.D1, b.D1, mainDatabase}, {&w.KV, b.Kv, ""}, {&w.R2, b.R2, ""},
			{&w.Queues, b.Queues, ""}, {&w.Services, b.Services, ""}, {&w.DurableObjects, b.DurableObjects, ""},
		} {
			for _, lb := range m.given {
				target := common.Deref(lb.Target, m.def)
				*m.into = slices.DeleteFunc(*m.into, func(x plannedBinding) bool { return x.Binding == lb.Binding })
				*m.into = append(*m.into, plannedBinding{Binding: lb.Binding, Target: target})
			}
		}
	}
	for k, v := range spec.Vars {
		delete(w.Secrets, k)
		w.Vars[k] = literal(v)
	}
	for k, v := range spec.Secrets {
		delete(w.Vars, k)
		w.Secrets[k] = valueRef{kind: refUserSecret, text: k}
		if w.UserSecrets == nil {
			w.UserSecrets = map[string]pulumi.StringInput{}
		}
		w.UserSecrets[k] = v
	}
	if spec.Crons != nil {
		w.Crons = slices.Clone(spec.Crons)
	}
}
