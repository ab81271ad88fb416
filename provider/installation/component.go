package installation

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// OpenInspect is one complete Open-Inspect installation: the component
// expands its spec into the Cloudflare resources, generated secrets, platform
// secrets and the web UI on Kubernetes.
type OpenInspect struct {
	pulumi.ResourceState

	ControlPlaneURL   pulumi.StringOutput    `pulumi:"controlPlaneUrl"`
	WebURL            pulumi.StringOutput    `pulumi:"webUrl"`
	D1DatabaseID      pulumi.StringOutput    `pulumi:"d1DatabaseId"`
	AppliedMigrations pulumi.IntOutput       `pulumi:"appliedMigrations"`
	WorkerNames       pulumi.StringMapOutput `pulumi:"workerNames"`
	WorkerHashes      pulumi.StringMapOutput `pulumi:"workerHashes"`
	SandboxStatus     pulumi.StringOutput    `pulumi:"sandboxStatus"`
	UpstreamCommit    pulumi.StringOutput    `pulumi:"upstreamCommit"`
}

// Annotate documents the component and its outputs.
func (o *OpenInspect) Annotate(a infer.Annotator) {
	a.Describe(o, "One complete Open-Inspect installation. With only the required inputs it creates what upstream's "+
		"Terraform creates at the pinned commit: the D1 database with its migrations, KV namespaces, the media R2 "+
		"bucket, queues, the control plane and bot workers with their bindings, vars, secrets, crons and Durable "+
		"Objects, and the generated shared secrets; optionally the platform's global secrets and the web UI on "+
		"Kubernetes. Names are <namePrefix>-<logical>-<deploymentName> and never change.")
	a.Describe(&o.ControlPlaneURL, "URL of the control-plane worker.")
	a.Describe(&o.WebURL, "URL of the web UI.")
	a.Describe(&o.D1DatabaseID, "ID of the D1 database.")
	a.Describe(&o.AppliedMigrations, "Number of D1 migrations applied.")
	a.Describe(&o.WorkerNames, "Script name by logical worker name.")
	a.Describe(&o.WorkerHashes, "Content hash by logical worker name; it changes exactly when the worker is uploaded again.")
	a.Describe(&o.SandboxStatus, "What the installation configured for its sandbox provider.")
	a.Describe(&o.UpstreamCommit, "The upstream commit this installation is pinned to.")
}

// NewOpenInspect validates the spec, then registers the installation. Nothing
// is registered when the spec is invalid.
func NewOpenInspect(ctx *pulumi.Context, name string, args OpenInspectArgs, opts ...pulumi.ResourceOption) (*OpenInspect, error) {
	contract, err := upstream.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the upstream contract: %w", err)
	}
	plan, err := planInstallation(contract, &args)
	if err != nil {
		return nil, err
	}
	comp := &OpenInspect{}
	if err := ctx.RegisterComponentResource("openinspect:index:OpenInspect", name, comp, opts...); err != nil {
		return nil, err
	}
	if args.Web != nil && args.WebAppURL == nil && common.Deref(args.Web.PublicURL, "") == "" {
		// The in-cluster URL is not an origin browsers reach, and the control
		// plane refuses plain http beyond loopback.
		_ = ctx.Log.Warn(fmt.Sprintf("web.publicUrl is not set, so the control plane's WEB_APP_URL stays %s "+
			"(upstream's default): set web.publicUrl to the URL your ingress serves the web UI at", plan.WebAppURL),
			&pulumi.LogArgs{Resource: comp})
	}
	if common.Deref(args.AdoptExisting, false) && args.ProviderAccountsEncryptionKey == nil {
		// Taking over an orphaned installation makes a new generated key, and
		// what the old one encrypted could no longer be read.
		_ = ctx.Log.Warn("adoptExisting is set but providerAccountsEncryptionKey is not: if the resources being adopted "+
			"belong to an installation that already stored provider accounts, set providerAccountsEncryptionKey to the key it "+
			"used (its PROVIDER_ACCOUNTS_ENCRYPTION_KEY), or what it encrypted can no longer be read", &pulumi.LogArgs{Resource: comp})
	}
	b := &installer{ctx: ctx, name: name, contract: contract, plan: plan, args: &args}
	if err := b.install(comp); err != nil {
		return nil, err
	}
	return comp, nil
}

// planInstallation validates and expands the spec, reporting every problem at once.
func planInstallation(contract *upstream.Contract, args *OpenInspectArgs) (*installPlan, error) {
	errs := validateArgs(args)
	var plan *installPlan
	if len(errs) == 0 {
		var err error
		if plan, err = buildPlan(contract, args); err != nil {
			return nil, err
		}
		errs = append(errs, validatePlan(plan, args)...)
		errs = append(errs, resolveArtifacts(contract, plan, args)...)
		if len(errs) == 0 {
			errs = checkDurableObjectClasses(plan, args)
		}
	}
	if len(errs) > 0 {
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = "  " + e.Error()
		}
		return nil, fmt.Errorf("invalid OpenInspect spec (nothing was changed):\n%s", strings.Join(lines, "\n"))
	}
	return plan, nil
}

// installer registers one installation's children.
type installer struct {
	ctx      *pulumi.Context
	name     string
	contract *upstream.Contract
	plan     *installPlan
	args     *OpenInspectArgs
	opts     []pulumi.ResourceOption

	generated map[string]*generatedSecretChild
	urls      *workerUrlsChild
	kv        map[string]*kvNamespaceChild
	r2        map[string]*r2BucketChild
	queues    map[string]*queueChild
}

// The children are registered by token with untyped inputs rather than through
// the generated Go SDK: the SDK is generated from this package, so depending on
// it here would make every schema change a bootstrap problem. Each struct holds
// the outputs the component reads.
type (
	plainChild struct{ pulumi.CustomResourceState }
	d1Child    struct {
		pulumi.CustomResourceState
		DatabaseID pulumi.StringOutput `pulumi:"databaseId"`
	}
	migrationsChild struct {
		pulumi.CustomResourceState
		AppliedCount pulumi.IntOutput `pulumi:"appliedCount"`
	}
	kvNamespaceChild struct {
		pulumi.CustomResourceState
		NamespaceID pulumi.StringOutput `pulumi:"namespaceId"`
	}
	r2BucketChild struct {
		pulumi.CustomResourceState
		Name pulumi.StringOutput `pulumi:"name"`
	}
	queueChild struct {
		pulumi.CustomResourceState
		Name    pulumi.StringOutput `pulumi:"name"`
		QueueID pulumi.StringOutput `pulumi:"queueId"`
	}
	workerChild struct {
		pulumi.CustomResourceState
		Hash pulumi.StringOutput `pulumi:"hash"`
	}
	generatedSecretChild struct {
		pulumi.CustomResourceState
		Value pulumi.StringOutput `pulumi:"value"`
	}
	workerUrlsChild struct {
		pulumi.CustomResourceState
		Urls pulumi.StringMapOutput `pulumi:"urls"`
	}
)

// register registers one child of the component.
func register[T pulumi.CustomResource](b *installer, token, suffix string, props pulumi.Map, child T, opts ...pulumi.ResourceOption) (T, error) {
	err := b.ctx.RegisterResource("openinspect:index:"+token, b.child(suffix), props, child, append(slices.Clone(b.opts), opts...)...)
	return child, err
}

func (b *installer) child(suffix string) string { return b.name + "-" + suffix }

func (b *installer) install(comp *OpenInspect) error {
	ctx, plan, args := b.ctx, b.plan, b.args
	b.opts = []pulumi.ResourceOption{pulumi.Parent(comp)}
	if common.Deref(args.DeletionPolicy, "Delete") == "Orphan" {
		b.opts = append(b.opts, pulumi.RetainOnDelete(true))
	}
	lock, err := register(b, "NameLock", "names", pulumi.Map{
		"namePrefix":     pulumi.String(plan.Prefix),
		"deploymentName": pulumi.String(plan.DeploymentName),
	}, &plainChild{})
	if err != nil {
		return err
	}
	// Nothing proceeds when the names changed: the lock's diff refuses.
	b.opts = append(b.opts, pulumi.DependsOn([]pulumi.Resource{lock}))
	adopt := pulumi.Bool(common.Deref(args.AdoptExisting, false))

	b.generated = map[string]*generatedSecretChild{}
	for _, g := range plan.Generated {
		alphabet := g.Alphabet
		if alphabet == upstream.AlphabetBase64Bytes {
			alphabet = "base64"
		}
		if b.generated[g.Name], err = register(b, "GeneratedSecret", "secret-"+g.Name, pulumi.Map{
			"length": pulumi.Int(g.Length), "alphabet": pulumi.String(alphabet),
		}, &generatedSecretChild{}); err != nil {
			return err
		}
	}

	db, err := register(b, "D1Database", "d1", pulumi.Map{"name": pulumi.String(plan.D1Name), "adoptExisting": adopt}, &d1Child{})
	if err != nil {
		return err
	}
	migrations, err := register(b, "D1Migrations", "d1-migrations", pulumi.Map{
		"databaseId": db.DatabaseID,
		"directory":  pulumi.NewFileArchive(plan.MigrationsDir),
	}, &migrationsChild{})
	if err != nil {
		return err
	}
	b.kv = map[string]*kvNamespaceChild{}
	for _, r := range plan.KV {
		if b.kv[r.Logical], err = register(b, "KvNamespace", "kv-"+r.Logical, pulumi.Map{
			"title": pulumi.String(r.Name), "adoptExisting": adopt,
		}, &kvNamespaceChild{}); err != nil {
			return err
		}
	}
	b.r2 = map[string]*r2BucketChild{}
	for _, r := range plan.R2 {
		props := pulumi.Map{"name": pulumi.String(r.Name), "adoptExisting": adopt}
		if r.Location != "" {
			props["locationHint"] = pulumi.String(r.Location)
		}
		if b.r2[r.Logical], err = register(b, "R2Bucket", "r2-"+r.Logical, props, &r2BucketChild{}); err != nil {
			return err
		}
	}
	b.queues = map[string]*queueChild{}
	for _, r := range plan.Queues {
		if b.queues[r.Logical], err = register(b, "Queue", "queue-"+r.Logical, pulumi.Map{
			"name": pulumi.String(r.Name), "adoptExisting": adopt,
		}, &queueChild{}); err != nil {
			return err
		}
	}

	scripts := make(pulumi.StringArray, 0, len(plan.Workers))
	for _, w := range plan.Workers {
		scripts = append(scripts, pulumi.String(w.Name))
	}
	if b.urls, err = register(b, "WorkerUrls", "worker-urls", pulumi.Map{"scripts": scripts}, &workerUrlsChild{}); err != nil {
		return err
	}

	workers := map[string]*workerChild{}
	names, hashes := pulumi.StringMap{}, pulumi.StringMap{}
	for _, w := range plan.Workers {
		var extra []pulumi.ResourceOption
		if w.Logical == controlPlane {
			// The control plane serves requests against the schema.
			extra = append(extra, pulumi.DependsOn([]pulumi.Resource{migrations}))
		}
		worker, err := register(b, "Worker", "worker-"+w.Logical, b.workerProps(w, db, adopt), &workerChild{}, extra...)
		if err != nil {
			return err
		}
		workers[w.Logical] = worker
		names[w.Logical] = pulumi.String(w.Name)
		hashes[w.Logical] = worker.Hash
	}
	controlPlaneURL := b.workerURL(controlPlane, urlFull)

	if len(args.AppSecrets) > 0 {
		secrets := pulumi.StringMap{}
		for k, v := range args.AppSecrets {
			secrets[k] = v
		}
		// Signed as the Slack bot: its key is always bound on the control
		// plane, and bot signatures need no browser session.
		if _, err := register(b, "AppSecrets", "app-secrets", pulumi.Map{
			"controlPlaneUrl": controlPlaneURL,
			"service":         pulumi.String("slack-bot"),
			"serviceSecret":   b.generated["serviceAuthSecretSlackBot"].Value,
			"secrets":         pulumi.ToSecret(secrets),
		}, &plainChild{}, pulumi.DependsOn([]pulumi.Resource{workers[controlPlane], migrations})); err != nil {
			return err
		}
	}

	webURL := pulumi.String(plan.WebAppURL).ToStringOutput()
	if args.Web != nil {
		deployed, err := web.Deploy(ctx, b.name, args.Web, web.Inputs{
			Installation:      plan.Installation,
			Name:              plan.resourceName("web"), // validatePlan checks pull secrets against it
			ControlPlaneURL:   controlPlaneURL,
			WebSocketURL:      b.workerURL(controlPlane, urlWebSocket),
			ServiceAuthSecret: b.generated["serviceAuthSecretWeb"].Value,
			SandboxProvider:   plan.SandboxProvider,
			AppName:           plan.AppName,
			Opts:              append(slices.Clone(b.opts), pulumi.DependsOn([]pulumi.Resource{workers[controlPlane]})),
		})
		if err != nil {
			return err
		}
		if args.WebAppURL == nil {
			webURL = deployed.URL
		}
	}

	comp.ControlPlaneURL = controlPlaneURL
	comp.WebURL = webURL
	comp.D1DatabaseID = db.DatabaseID
	comp.AppliedMigrations = migrations.AppliedCount
	comp.WorkerNames = names.ToStringMapOutput()
	comp.WorkerHashes = hashes.ToStringMapOutput()
	comp.SandboxStatus = pulumi.String(b.sandboxStatus()).ToStringOutput()
	comp.UpstreamCommit = pulumi.String(b.contract.Upstream.Commit).ToStringOutput()
	return nil
}

func (b *installer) sandboxStatus() string {
	cp := b.plan.worker(controlPlane)
	var injected []string
	for _, prefix := range []string{"MODAL_", "DAYTONA_"} {
		for _, set := range []map[string]valueRef{cp.Vars, cp.Secrets} {
			for k := range set {
				if strings.HasPrefix(k, prefix) {
					injected = append(injected, k)
				}
			}
		}
	}
	if len(injected) == 0 {
		return b.plan.SandboxProvider + ": selected; no provider settings given, so the control plane has none"
	}
	return fmt.Sprintf("%s: %d settings configured on the control plane", b.plan.SandboxProvider, len(injected))
}

// workerProps resolves a planned worker into the Worker resource's inputs.
func (b *installer) workerProps(w *plannedWorker, db *d1Child, adopt pulumi.BoolInput) pulumi.Map {
	c := b.contract
	mainModule := "index.js"
	if cw := c.Worker(w.Logical); cw != nil && cw.MainModule != "" {
		mainModule = cw.MainModule
	}
	binding := func(name string, kv ...any) pulumi.Map {
		m := pulumi.Map{"binding": pulumi.String(name)}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(pulumi.Input)
		}
		return m
	}
	var d1, kv, r2, queues, services, objects, consumers pulumi.Array
	for _, x := range w.D1 {
		d1 = append(d1, binding(x.Binding, "databaseId", db.DatabaseID))
	}
	for _, x := range w.KV {
		kv = append(kv, binding(x.Binding, "namespaceId", b.kv[x.Target].NamespaceID))
	}
	for _, x := range w.R2 {
		r2 = append(r2, binding(x.Binding, "bucketName", b.r2[x.Target].Name))
	}
	for _, x := range w.Queues {
		queues = append(queues, binding(x.Binding, "queueName", b.queues[x.Target].Name))
	}
	for _, x := range w.Services {
		// By script name, not by resource: bound workers may bind each other.
		services = append(services, binding(x.Binding, "service", pulumi.String(b.plan.worker(x.Target).Name)))
	}
	for _, x := range w.DurableObjects {
		objects = append(objects, binding(x.Binding, "className", pulumi.String(x.Target)))
	}
	for _, qc := range w.Consumers {
		consumer := pulumi.Map{
			"queueId":           b.queues[qc.Queue].QueueID,
			"maxBatchSize":      pulumi.Int(qc.MaxBatchSize),
			"maxWaitTimeMs":     pulumi.Int(qc.MaxWaitTimeMs),
			"maxConcurrency":    pulumi.Int(qc.MaxConcurrency),
			"maxRetries":        pulumi.Int(qc.MaxRetries),
			"retryDelaySeconds": pulumi.Int(qc.RetryDelaySeconds),
		}
		if dlq, ok := b.queues[qc.DeadLetterQueue]; ok {
			consumer["deadLetterQueue"] = dlq.Name
		}
		consumers = append(consumers, consumer)
	}
	vars, secrets := pulumi.StringMap{}, pulumi.StringMap{}
	for k, ref := range w.Vars {
		vars[k] = b.value(w, ref)
	}
	for k, ref := range w.Secrets {
		secrets[k] = b.value(w, ref)
	}
	return pulumi.Map{
		"name":               pulumi.String(w.Name),
		"script":             pulumi.NewFileAsset(w.Script),
		"mainModule":         pulumi.String(mainModule),
		"compatibilityDate":  pulumi.String(c.Compatibility.Date),
		"compatibilityFlags": pulumi.ToStringArray(c.Compatibility.Flags),
		"workersDev":         pulumi.Bool(c.Compatibility.WorkersDev),
		"adoptExisting":      adopt,
		"d1Databases":        d1,
		"kvNamespaces":       kv,
		"r2Buckets":          r2,
		"queues":             queues,
		"services":           services,
		"durableObjects":     objects,
		"queueConsumers":     consumers,
		"crons":              pulumi.ToStringArray(w.Crons),
		"vars":               vars,
		"secrets":            pulumi.ToSecret(secrets),
	}
}

// value materialises a value reference.
func (b *installer) value(w *plannedWorker, ref valueRef) pulumi.StringInput {
	var out pulumi.StringInput
	switch ref.kind {
	case refLiteral:
		return pulumi.String(ref.text)
	case refSecretInput:
		out = b.plan.SecretInputs[ref.text]
	case refGenerated:
		out = b.generated[ref.text].Value
	case refWorkerURL:
		return b.workerURL(ref.text, ref.form)
	case refUserSecret:
		out = w.UserSecrets[ref.text]
	}
	if ref.trim {
		return out.ToStringOutput().ApplyT(strings.TrimSpace).(pulumi.StringOutput)
	}
	return out
}

// workerURL is a worker's URL, host or WebSocket URL, known before the worker exists.
func (b *installer) workerURL(logical string, form urlForm) pulumi.StringOutput {
	script := b.plan.worker(logical).Name
	full := b.urls.Urls.MapIndex(pulumi.String(script))
	return full.ApplyT(func(s string) (string, error) {
		switch form {
		case urlHost:
			u, err := url.Parse(s)
			if err != nil {
				return "", err
			}
			return u.Host, nil
		case urlWebSocket:
			if rest, ok := strings.CutPrefix(s, "https://"); ok {
				return "wss://" + rest, nil
			}
			if rest, ok := strings.CutPrefix(s, "http://"); ok {
				return "ws://" + rest, nil
			}
			return "", errors.New("worker URL " + s + " is neither http nor https")
		}
		return s, nil
	}).(pulumi.StringOutput)
}
