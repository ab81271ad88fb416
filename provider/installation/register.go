package installation

import (
	"errors"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/kube"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
)

// Stage 6: registration of the children, in dependency order, from a plan
// every earlier stage accepted.

// installer registers one installation's children.
type installer struct {
	ctx      *pulumi.Context
	name     string
	contract *upstream.Contract
	plan     *installPlan
	spec     *spec
	opts     []pulumi.ResourceOption

	generated map[string]*generatedSecretChild
	urls      *workerUrlsChild
	kv        map[string]*kvNamespaceChild
	r2        map[string]*r2BucketChild
	queues    map[string]*queueChild
	modal     *modalAppChild       // the ModalApp child, whose health URL is an output
	sandboxed *sandboxChild        // the sandbox child, once registered
	vercelURL *pulumi.StringOutput // the web's production URL on Vercel, once registered
	owner     pulumi.Map           // the ownership inputs: owner (the identity) and takeOverFrom
}

// owned adds the ownership inputs to a child's properties.
func (b *installer) owned(props pulumi.Map) pulumi.Map {
	maps.Copy(props, b.owner)
	return props
}

// The children are registered by token with untyped inputs rather than through
// the generated Go SDK: the SDK is generated from this package, so depending on
// it here would make every schema change a bootstrap problem. Each struct holds
// the outputs the component reads.
type (
	plainChild struct{ pulumi.CustomResourceState }
	lockChild  struct {
		pulumi.CustomResourceState
		InstallationID pulumi.StringOutput `pulumi:"installationId"`
	}
	d1Child struct {
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

// webConnect is how the web part reaches the cluster for its ownership
// checks: nil (kube.New) except in tests, which answer without a cluster.
var webConnect func(kubeconfig, kubeContext string) (kube.Reader, error)

// register registers one child of the component.
func register[T pulumi.CustomResource](b *installer, token, suffix string, props pulumi.Map, child T, opts ...pulumi.ResourceOption) (T, error) {
	err := b.ctx.RegisterResource("openinspect:index:"+token, b.child(suffix), props, child, append(slices.Clone(b.opts), opts...)...)
	return child, err
}

func (b *installer) child(suffix string) string { return b.name + "-" + suffix }

func (b *installer) install(comp *OpenInspect) error {
	ctx, plan, s := b.ctx, b.plan, b.spec
	b.opts = []pulumi.ResourceOption{pulumi.Parent(comp)}
	// The workers bind each other; told before any registers, a preview
	// warns of none of them as a service target nothing creates.
	planned := make([]string, 0, len(plan.Workers)+1)
	for _, w := range plan.Workers {
		planned = append(planned, w.Name)
	}
	if plan.Web != nil {
		planned = append(planned, plan.Web.Name)
	}
	cloudflare.PlanScripts(planned...)
	orphan := s.DeletionPolicy == "Orphan"
	if orphan {
		b.opts = append(b.opts, pulumi.RetainOnDelete(true))
	}
	lockProps := pulumi.Map{
		"namePrefix":     pulumi.String(plan.Prefix),
		"deploymentName": pulumi.String(plan.DeploymentName),
		"preflight":      b.preflight(),
	}
	// The lock checks the zones before any child depending on it is
	// touched: an up without a preview refuses a custom domain's zone as
	// early as a preview does, not once the rest of the installation exists.
	if plan.Web != nil && plan.Web.CustomDomain != nil {
		d := plan.Web.CustomDomain
		lockProps["hostnames"] = pulumi.Array{pulumi.Map{
			"field": pulumi.String("web.customDomain"), "hostname": pulumi.String(d.Hostname), "zoneId": pulumi.String(d.ZoneID),
		}}
	}
	lock, err := register(b, "NameLock", "names", lockProps, &lockChild{})
	if err != nil {
		return err
	}
	// Nothing proceeds when the names changed: the lock's diff refuses.
	b.opts = append(b.opts, pulumi.DependsOn([]pulumi.Resource{lock}))
	adopt := pulumi.Bool(s.Adopt)
	// Every child that records ownership evidence records the lock's identity.
	b.owner = pulumi.Map{"owner": lock.InstallationID, "takeOverFrom": pulumi.String(s.TakeOverFrom)}

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

	db, err := register(b, "D1Database", "d1", b.owned(pulumi.Map{"name": pulumi.String(plan.D1Name), "adoptExisting": adopt}), &d1Child{})
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
		if b.kv[r.Logical], err = register(b, "KvNamespace", "kv-"+r.Logical, b.owned(pulumi.Map{
			"title": pulumi.String(r.Name), "adoptExisting": adopt,
		}), &kvNamespaceChild{}); err != nil {
			return err
		}
	}
	b.r2 = map[string]*r2BucketChild{}
	for _, r := range plan.R2 {
		props := pulumi.Map{"name": pulumi.String(r.Name), "adoptExisting": adopt}
		if r.Location != "" {
			props["locationHint"] = pulumi.String(r.Location)
		}
		if b.r2[r.Logical], err = register(b, "R2Bucket", "r2-"+r.Logical, b.owned(props), &r2BucketChild{}); err != nil {
			return err
		}
	}
	b.queues = map[string]*queueChild{}
	// A queue's owner is recorded in the account's ownership registry: Cloudflare
	// keeps nothing on a queue but its name and settings (see the cloudflare package doc).
	for _, r := range plan.Queues {
		if b.queues[r.Logical], err = register(b, "Queue", "queue-"+r.Logical, b.owned(pulumi.Map{
			"name": pulumi.String(r.Name), "adoptExisting": adopt,
		}), &queueChild{}); err != nil {
			return err
		}
	}

	scripts := make(pulumi.StringArray, 0, len(plan.Workers))
	for _, w := range plan.Workers {
		scripts = append(scripts, pulumi.String(w.Name))
	}
	if plan.Web != nil && plan.Web.workersDev() {
		scripts = append(scripts, pulumi.String(plan.Web.Name))
	}
	if b.urls, err = register(b, "WorkerUrls", "worker-urls", pulumi.Map{"scripts": scripts}, &workerUrlsChild{}); err != nil {
		return err
	}

	if plan.VercelWeb != nil {
		// Before the workers: the control plane's WEB_APP_URL is the
		// deployment's production URL, and the deployment needs only the
		// control plane's URL, which WorkerUrls knows already.
		url, err := b.webOnVercel(s.Adopt)
		if err != nil {
			return err
		}
		b.vercelURL = &url
	}

	sandboxReg := sandboxRegistration{comp: comp, lock: lock, db: db, adopt: adopt, orphan: orphan}
	if err := b.sandbox(sandboxReg); err != nil {
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
		worker, err := register(b, "Worker", "worker-"+w.Logical, b.owned(b.workerProps(w, db, adopt)), &workerChild{}, extra...)
		if err != nil {
			return err
		}
		workers[w.Logical] = worker
		names[w.Logical] = pulumi.String(w.Name)
		hashes[w.Logical] = worker.Hash
	}
	controlPlaneURL := b.workerURL(controlPlane, urlFull)
	if err := b.sandboxAfterControlPlane(sandboxReg, workers[controlPlane]); err != nil {
		return err
	}

	if len(s.AppSecrets) > 0 {
		secrets := pulumi.StringMap{}
		for k, v := range s.AppSecrets {
			secrets[tenant.AppSecretName(k)] = v // as the store keeps it, so refresh and prune agree
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
	switch {
	case plan.VercelWeb != nil:
		// Registered before the workers.
		if s.WebFromVercel {
			webURL = *b.vercelURL
		}
	case plan.Web != nil:
		if err := b.webOnCloudflare(controlPlaneURL, adopt); err != nil {
			return err
		}
		if s.WebFromWorker {
			webURL = b.workerURL(webLogical, urlFull)
		}
	case s.Web != nil:
		deployed, err := web.Deploy(ctx, b.name, s.Web, web.Inputs{
			Installation:      lock.InstallationID,
			Name:              plan.resourceName("web"), // validatePlan checks pull secrets against it
			ControlPlaneURL:   controlPlaneURL,
			WebSocketURL:      b.workerURL(controlPlane, urlWebSocket),
			ServiceAuthSecret: b.generated["serviceAuthSecretWeb"].Value,
			SandboxProvider:   plan.SandboxProvider,
			AppName:           plan.AppName,
			AppIconURL:        plan.AppIconURL,
			Opts:              append(slices.Clone(b.opts), pulumi.DependsOn([]pulumi.Resource{workers[controlPlane]})),
			Connect:           webConnect,
		})
		if err != nil {
			return err
		}
		if s.WebAppURL == "" {
			webURL = deployed.URL
		}
	}

	comp.ControlPlaneURL = controlPlaneURL
	comp.WebURL = webURL
	comp.D1DatabaseID = db.DatabaseID
	comp.AppliedMigrations = migrations.AppliedCount
	comp.WorkerNames = names.ToStringMapOutput()
	comp.WorkerHashes = hashes.ToStringMapOutput()
	comp.SandboxStatus = b.sandboxStatus()
	comp.UpstreamCommit = pulumi.String(b.contract.Upstream.Commit).ToStringOutput()
	comp.UpstreamVerification = pulumi.ToStringMap(plan.Verification).ToStringMapOutput()
	comp.UpstreamSummary = pulumi.String(plan.Summary).ToStringOutput()
	b.reportOutputs(comp)
	return nil
}

// sandbox registers the sandbox child the plan asks for, through its
// backend. Its teardown reports what it keeps under the Orphan policy
// (keepOnDelete) instead of being silently retained, so it never carries
// retainOnDelete.
func (b *installer) sandbox(r sandboxRegistration) error {
	r.opts = []pulumi.ResourceOption{pulumi.Parent(r.comp), pulumi.DependsOn([]pulumi.Resource{r.lock})}
	backend := b.plan.plannedBackend()
	if backend == nil {
		return nil
	}
	child, err := backend.register(b, r)
	b.sandboxed = child
	return err
}

// lateSandbox is a backend whose child is registered once the control plane
// is uploaded (E2B, as upstream orders it).
type lateSandbox interface {
	registerAfterControlPlane(b *installer, r sandboxRegistration, cp pulumi.Resource) error
}

// sandboxAfterControlPlane registers the sandbox child of a lateSandbox
// backend.
func (b *installer) sandboxAfterControlPlane(r sandboxRegistration, cp pulumi.Resource) error {
	if late, ok := b.plan.plannedBackend().(lateSandbox); ok {
		return late.registerAfterControlPlane(b, r, cp)
	}
	return nil
}

// sandboxOutput is an output of the sandbox child by its name.
func (b *installer) sandboxOutput(name string) pulumi.StringOutput {
	if b.sandboxed != nil {
		if out, ok := b.sandboxed.outputs[name]; ok {
			return out
		}
	}
	panic("installation: no sandbox output " + name) // the planner only names the planned child's
}

// sandboxStatus says what the installation does for its sandbox provider.
func (b *installer) sandboxStatus() pulumi.StringOutput {
	plan := b.plan
	if b.sandboxed != nil && b.sandboxed.status != nil {
		return b.sandboxed.status()
	}
	cp := plan.worker(controlPlane)
	var injected []string
	for _, prefix := range []string{"MODAL_", "DAYTONA_", "E2B_", "OPENCOMPUTER_", "VERCEL_"} {
		for _, set := range []map[string]valueRef{cp.Vars, cp.Secrets} {
			for k := range set {
				if strings.HasPrefix(k, prefix) {
					injected = append(injected, k)
				}
			}
		}
	}
	if len(injected) == 0 {
		return pulumi.String(plan.SandboxProvider + ": selected; no provider settings given, so the control plane has none").ToStringOutput()
	}
	return pulumi.Sprintf("%s: %d settings configured on the control plane (the sandbox side is deployed by other means)",
		plan.SandboxProvider, len(injected))
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
		// Each value a secret of its own, not the map as one: a secret
		// whose value is not known at a preview (a generated secret new at
		// an upgrade of the pin) is then unknown alone, and the worker's
		// preview names it added instead of reading every other secret
		// as removed.
		secrets[k] = pulumi.ToSecret(b.value(w, ref).ToStringOutput()).(pulumi.StringOutput)
	}
	props := pulumi.Map{
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
		"secrets":            secrets,
	}
	if o := w.Observability; o != nil {
		props["observability"] = observabilityInput(*o)
	}
	return props
}

// observabilityInput is a worker's Workers Logs setting as the Worker
// child's input.
func observabilityInput(o cloudflare.Observability) pulumi.Map {
	m := pulumi.Map{"enabled": pulumi.Bool(o.Enabled)}
	if o.HeadSamplingRate != nil {
		m["headSamplingRate"] = pulumi.Float64(*o.HeadSamplingRate)
	}
	if l := o.Logs; l != nil {
		logs := pulumi.Map{"enabled": pulumi.Bool(l.Enabled)}
		if l.HeadSamplingRate != nil {
			logs["headSamplingRate"] = pulumi.Float64(*l.HeadSamplingRate)
		}
		if l.InvocationLogs != nil {
			logs["invocationLogs"] = pulumi.Bool(*l.InvocationLogs)
		}
		m["logs"] = logs
	}
	return m
}

// value materialises a value reference.
func (b *installer) value(w *plannedWorker, ref valueRef) pulumi.StringInput {
	var out pulumi.StringInput
	switch ref.kind {
	case refLiteral:
		return pulumi.String(ref.text)
	case refSecretInput:
		out = b.plan.SecretInputs[ref.text]
	case refOutputInput:
		out = b.plan.OutputInputs[ref.text]
	case refGenerated:
		out = b.generated[ref.text].Value
	case refWorkerURL:
		return b.workerURL(ref.text, ref.form)
	case refUserSecret:
		out = w.UserSecrets[ref.text]
	case refSandbox:
		return b.sandboxOutput(ref.text)
	case refVercelWeb:
		return b.vercelWebURL()
	}
	if ref.trim {
		return out.ToStringOutput().ApplyT(strings.TrimSpace).(pulumi.StringOutput)
	}
	return out
}

// workerURL is a worker's URL, host or WebSocket URL, known before the worker exists.
func (b *installer) workerURL(logical string, form urlForm) pulumi.StringOutput {
	script := b.plan.scriptName(logical)
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
