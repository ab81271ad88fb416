package installation

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
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
	// refSandbox is an output of the sandbox child (text names it).
	refSandbox
	// refVercelWeb is the production URL of the web's Vercel deployment.
	refVercelWeb
	// refOutputInput is a plain input given as another resource's output
	// (a sandbox apiUrl): text is its contract name in OutputInputs.
	refOutputInput
)

// The outputs of the sandbox children a value may refer to.
const (
	sandboxWorkspace   = "workspace"
	sandboxEnvironment = "deployedEnvironment"
	sandboxWebSuffix   = "webSuffix"
	sandboxSnapshot    = "name"
	// sandboxE2BTemplate is the E2bTemplate's name, computed from local
	// files by the installation itself: the template builds after the
	// control plane is uploaded, so the control plane cannot wait for it.
	sandboxE2BTemplate = "e2bTemplateName"
	// sandboxOpenComputer is the OpenComputerSnapshot's name output: the
	// control plane is uploaded once the snapshot it names is ready.
	sandboxOpenComputer = "openComputerSnapshotName"
	// sandboxVercel is the VercelSnapshot's name output (the build
	// sandbox's name, which the control plane resolves to the snapshot).
	sandboxVercel = "vercelBaseSnapshotName"
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
	ScriptField                                  string // the input Script came from, for messages
	D1, KV, R2, Queues, Services, DurableObjects []plannedBinding
	Vars, Secrets                                map[string]valueRef
	// UserSecrets are the values of secrets set on the worker entry.
	UserSecrets map[string]pulumi.StringInput
	Crons       []string
	Consumers   []upstream.QueueConsumer
	// Observability is the worker's Workers Logs setting: upstream's for
	// every worker unless its entry gives one; nil leaves it off.
	Observability *cloudflare.Observability
}

// bindingsOf is where w keeps its bindings of a kind (upstream.Bound.Kind),
// nil for a kind the plan does not know.
func (w *plannedWorker) bindingsOf(kind string) *[]plannedBinding {
	return map[string]*[]plannedBinding{"d1": &w.D1, "kv": &w.KV, "r2": &w.R2,
		"queueProducers": &w.Queues, "services": &w.Services, "durableObjects": &w.DurableObjects}[kind]
}

// installPlan is the whole installation as plain data: what the component
// registers, in a form tests can compare with the contract.
type installPlan struct {
	Prefix, DeploymentName              string
	AppName, SandboxProvider, WebAppURL string
	// AppIconURL is the web's icon (upstream's app_icon_url).
	AppIconURL            string
	D1Name, MigrationsDir string
	KV, R2, Queues        []plannedResource
	Workers               []*plannedWorker
	// Generated are the generated secrets some value refers to, in contract order.
	Generated []upstream.Generated
	// SecretInputs are the secrets the user gave, by contract input name.
	SecretInputs map[string]pulumi.StringInput
	// OutputInputs are the plain inputs given as another resource's output
	// (the sandbox apiUrl), by contract input name: they reach the workers
	// as outputs.
	OutputInputs map[string]pulumi.StringInput
	// Modal and Snapshot are the sandbox children, when the installation
	// deploys its sandbox side; SandboxSource is the checkout they read.
	Modal         *plannedModal
	Snapshot      *plannedSnapshot
	E2BTemplate   *plannedE2BTemplate
	OpenComputer  *plannedOpenComputer
	Vercel        *plannedVercel
	SandboxSource string
	// Web is the web UI's Worker on Cloudflare (web.platform cloudflare).
	Web *plannedWeb
	// VercelWeb is the web UI on Vercel (web.platform vercel).
	VercelWeb *plannedVercelWeb
	// Verification is what resolveArtifacts checked (the upstreamVerification
	// output); Warnings are what it found but does not refuse, one line per
	// condition; Details are the per-file findings behind them, logged at
	// debug level.
	Verification map[string]string
	Warnings     []string
	Details      []string
	// Summary is Verification in one line (the upstreamSummary output).
	Summary string
	// differingBundles are the workers whose bundle differs from the
	// reference build, gathered into one warning.
	differingBundles []string
	// pinnedBundles are the workers whose bundle is the pin's own build
	// (embedded, or equal to the reference build's digest).
	pinnedBundles map[string]bool
	// tally counts what resolveArtifacts compared, for Summary.
	tally verificationTally

	naming upstream.Naming
}

// plannedModal is the ModalApp child.
type plannedModal struct {
	Environment string // "" means the provider's modalEnvironment
	Secrets     []plannedModalSecret
}

// plannedModalSecret is one named Modal secret with its values as references.
type plannedModalSecret struct {
	Name string
	Keys map[string]valueRef
}

// plannedSnapshot is the DaytonaSnapshot child.
type plannedSnapshot struct {
	NamePrefix         string
	GracePeriodSeconds *int
}

// plannedE2BTemplate is the E2bTemplate child.
type plannedE2BTemplate struct {
	NamePrefix         string
	CPU, MemoryMB      *int
	GracePeriodSeconds *int
}

// plannedOpenComputer is the OpenComputerSnapshot child.
type plannedOpenComputer struct {
	NamePrefix         string
	BuilderMemoryMB    *int
	GracePeriodSeconds *int
}

// plannedVercel is the VercelSnapshot child.
type plannedVercel struct {
	NamePrefix         string
	GracePeriodSeconds *int
}

// modalAPISecret is the generated secret the control plane and the managed
// Modal app share when the user gives none (upstream asks for one; a
// managed installation makes its own).
var modalAPISecret = upstream.Generated{Name: "modalApiSecret", Length: 64, Alphabet: "alphanumeric"}

func (p *installPlan) worker(logical string) *plannedWorker {
	for _, w := range p.Workers {
		if w.Logical == logical {
			return w
		}
	}
	return nil
}

// scriptName is a worker's script name: a planned worker's, or the web
// Worker's, which is not one of Workers (it has no contract entry or bundle).
func (p *installPlan) scriptName(logical string) string {
	if w := p.worker(logical); w != nil {
		return w.Name
	}
	return p.resourceName(logical)
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
	str("appIconUrl", a.AppIconURL)
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
			str("daytonaBaseSnapshot", d.BaseSnapshot)
			str("daytonaTarget", d.Target)
			secret("daytonaApiKey", d.APIKey)
		}
		if e := x.E2B; e != nil {
			str("e2bTemplateId", e.TemplateID)
			secret("e2bApiKey", e.APIKey)
		}
		if v := x.Vercel; v != nil {
			secret("vercelSandboxToken", v.Token)
			str("vercelSandboxProjectId", v.ProjectID)
			str("vercelSandboxTeamId", v.TeamID)
			str("vercelSandboxRuntime", v.Runtime)
			str("vercelBaseSnapshotId", v.BaseSnapshotID)
			if v.SnapshotExpirationMs != nil {
				plain["vercelSnapshotExpirationMs"] = strconv.Itoa(*v.SnapshotExpirationMs)
			}
		}
		if o := x.OpenComputer; o != nil {
			str("opencomputerTemplate", o.Template)
			secret("opencomputerApiKey", o.APIKey)
		}
	}
	if x := a.Media; x != nil {
		str("r2MediaLocation", x.Location)
		str("r2MediaBucketName", x.BucketName)
	}
	return plain, secrets
}

// planner evaluates the contract for one installation.
type planner struct {
	contract *upstream.Contract
	values   upstream.Values
	plan     *installPlan
	// generated collects the generated secrets values refer to.
	generated map[string]bool
	// webFromWorker: webAppUrl is the web Worker's URL (spec.WebFromWorker).
	webFromWorker bool
	// webFromVercel: webAppUrl is the Vercel deployment's production URL.
	webFromVercel bool
}

// Stage 3: the plan. buildPlan expands a validated spec into the
// installation; the artefacts (bundles, migrations, sandbox sources) are
// filled in by resolveArtifacts.
func buildPlan(c *upstream.Contract, s *spec) (*installPlan, error) {
	plainInputs, secretInputs := s.contractInputs()
	plainURLs, outputURLs, urlConditions := s.apiURLContractInputs()
	plan := &installPlan{
		Prefix:          s.Prefix,
		DeploymentName:  s.DeploymentName,
		AppName:         s.AppName,
		SandboxProvider: s.SandboxProvider,
		WebAppURL:       s.WebOrigin,
		SecretInputs:    secretInputs,
		OutputInputs:    outputURLs,
		naming:          c.Naming,
	}
	values := c.Defaults()
	maps.Copy(values.Inputs, plainInputs)
	maps.Copy(values.Inputs, plainURLs)
	maps.Copy(values.Inputs, urlConditions)
	for name := range secretInputs {
		values.Inputs[name] = secretPlaceholder
	}
	values.Derived["deploymentName"] = s.DeploymentName
	values.Derived["sandboxProvider"] = plan.SandboxProvider
	values.Derived["webAppUrl"] = plan.WebAppURL
	if plan.AppName != "" {
		values.Derived["appName"] = plan.AppName
	} else {
		plan.AppName = values.Derived["appName"]
	}
	if sfx := s.Modal.EnvironmentWebSuffix; sfx != nil {
		values.Derived["modalEnvironmentWebSuffix"] = *sfx
	}
	plan.AppIconURL = values.Inputs["appIconUrl"]
	pl := &planner{contract: c, values: values, plan: plan, generated: map[string]bool{}, webFromWorker: s.WebFromWorker,
		webFromVercel: s.WebFromVercel}
	if err := pl.resources(s); err != nil {
		return nil, err
	}
	if err := pl.workers(s); err != nil {
		return nil, err
	}
	if err := pl.sandbox(s); err != nil {
		return nil, err
	}
	for _, g := range append(slices.Clone(c.Generated), modalAPISecret) {
		if pl.generated[g.Name] {
			plan.Generated = append(plan.Generated, g)
		}
	}
	return plan, nil
}

// sandbox plans the sandbox children and points the control plane's
// provider settings at their outputs (the contract's controlPlaneVars and
// controlPlaneSecrets of the provider), replacing what the contract's
// conditions would have taken from inputs.
func (pl *planner) sandbox(s *spec) error {
	plan := pl.plan
	cp := plan.worker(controlPlane)
	if s.buildsSandbox() {
		if err := s.backend().plan(pl, s); err != nil {
			return err
		}
	}
	if v, ok := cp.Vars["VERCEL_BASE_SNAPSHOT_NAME"]; ok && v.kind == refSandbox && v.text == sandboxVercel && plan.Vercel == nil {
		return fmt.Errorf("sandbox.vercel.baseSnapshotId: required when the installation builds no Vercel base snapshot")
	}
	if v, ok := cp.Vars["OPENCOMPUTER_TEMPLATE"]; ok && v.kind == refSandbox && v.text == sandboxOpenComputer && plan.OpenComputer == nil {
		return fmt.Errorf("sandbox.opencomputer.template: required when the installation builds no OpenComputer snapshot")
	}
	return nil
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

func (pl *planner) resources(a *spec) error {
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

func (pl *planner) workers(a *spec) error {
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
	for i, entry := range a.Workers {
		w := plan.worker(entry.Name)
		if w == nil {
			w = &plannedWorker{Logical: entry.Name, Name: plan.resourceName(entry.Name),
				Vars: map[string]valueRef{}, Secrets: map[string]valueRef{}, Observability: upstreamObservability(pl.contract)}
			plan.Workers = append(plan.Workers, w)
		}
		mergeWorker(w, entry, a.bindings[i])
	}
	return nil
}

// contractWorker expands one upstream worker with the conditions that hold.
func (pl *planner) contractWorker(cw *upstream.Worker) (*plannedWorker, error) {
	w := &plannedWorker{
		Logical:       cw.Logical,
		Name:          pl.plan.resourceName(cw.Logical),
		Vars:          map[string]valueRef{},
		Secrets:       map[string]valueRef{},
		Observability: upstreamObservability(pl.contract),
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
	for _, x := range cw.Bindings.All() {
		into := w.bindingsOf(x.Kind)
		if into == nil {
			return nil, fmt.Errorf("worker %s: the plan has no place for %s binding %s", cw.Logical, x.Kind, x.Binding)
		}
		add(into, x.Binding, x.Target, x.When)
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
		if _, output := pl.plan.OutputInputs[s.Input]; output {
			return valueRef{kind: refOutputInput, text: s.Input, trim: s.Trim}, nil
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
		case "webAppUrl":
			if pl.webFromWorker {
				return valueRef{kind: refWorkerURL, text: webLogical, form: urlFull}, nil
			}
			if pl.webFromVercel {
				return valueRef{kind: refVercelWeb}, nil
			}
			v, err := c.Resolve(s, pl.values)
			return literal(v), err
		case "vercelBaseSnapshotName":
			// The managed base snapshot's sandbox name; sandbox checks that a
			// VercelSnapshot child builds it.
			return valueRef{kind: refSandbox, text: sandboxVercel}, nil
		case "opencomputerSnapshotName":
			// The managed snapshot's name (upstream's module output); sandbox
			// checks that an OpenComputerSnapshot child builds it.
			return valueRef{kind: refSandbox, text: sandboxOpenComputer}, nil
		case "deploymentName", "appName", "sandboxProvider", "modalEnvironmentWebSuffix":
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

// mergeWorker applies a worker entry of the spec and its resolved bindings
// (nil for none): explicit values win over the contract's defaults and the
// sandbox injection.
func mergeWorker(w *plannedWorker, entry InstallationWorkerArgs, b *workerBindings) {
	if b != nil {
		for _, m := range []struct {
			into  *[]plannedBinding
			given []plannedBinding
		}{
			{&w.D1, b.D1}, {&w.KV, b.KV}, {&w.R2, b.R2},
			{&w.Queues, b.Queues}, {&w.Services, b.Services}, {&w.DurableObjects, b.DurableObjects},
		} {
			for _, lb := range m.given {
				*m.into = slices.DeleteFunc(*m.into, func(x plannedBinding) bool { return x.Binding == lb.Binding })
				*m.into = append(*m.into, lb)
			}
		}
	}
	for k, v := range entry.Vars {
		delete(w.Secrets, k)
		w.Vars[k] = literal(v)
	}
	for k, v := range entry.Secrets {
		delete(w.Vars, k)
		w.Secrets[k] = valueRef{kind: refUserSecret, text: k}
		if w.UserSecrets == nil {
			w.UserSecrets = map[string]pulumi.StringInput{}
		}
		w.UserSecrets[k] = v
	}
	if entry.Crons != nil {
		w.Crons = slices.Clone(entry.Crons)
	}
	if entry.Observability != nil {
		o := *entry.Observability
		w.Observability = &o
	}
}

// upstreamObservability is the Workers Logs setting upstream's worker
// module gives every worker (nil when the contract records none).
func upstreamObservability(c *upstream.Contract) *cloudflare.Observability {
	o := c.Compatibility.Observability
	if o == nil {
		return nil
	}
	return &cloudflare.Observability{Enabled: o.Enabled, HeadSamplingRate: new(o.HeadSamplingRate),
		Logs: &cloudflare.ObservabilityLogs{Enabled: o.Logs.Enabled, HeadSamplingRate: new(o.Logs.HeadSamplingRate),
			InvocationLogs: new(o.Logs.InvocationLogs)}}
}
