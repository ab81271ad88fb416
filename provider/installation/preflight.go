package installation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The preflight before the first write has two halves. What needs the
// credentials or this machine (the Cloudflare token and account, the Modal
// token and environment, the Python the Modal deploy and the Daytona and
// E2B builds run with, the Vercel token, team and project name, the
// sandbox backend's key) is verified by the NameLock, which every child
// depends on: its create is previewed, so a preview refuses, and an up
// without a preview stops at the lock, before any child. preflight says
// what to verify. What needs only the program, that no other OpenInspect
// of the same program claims this installation's names, is checked here,
// in Construct, at preview and up alike, with no call.

// preflight is the lock's preflight input for the plan.
func (b *installer) preflight() pulumi.Map {
	plan := b.plan
	props := pulumi.Map{"cloudflare": pulumi.Bool(true)}
	if plan.Modal != nil || plan.Snapshot != nil || plan.E2BTemplate != nil {
		props["python"] = pulumi.Bool(true) // the Modal deploy and the Daytona and E2B builders run with it
	}
	if m := plan.Modal; m != nil {
		modal := pulumi.Map{}
		if m.Environment != "" {
			modal["environment"] = pulumi.String(m.Environment)
			modal["field"] = pulumi.String("sandbox.modal.environment")
		}
		props["modal"] = modal
	}
	if v := plan.VercelWeb; v != nil && v.Token != nil {
		vercel := pulumi.Map{
			"token":         pulumi.ToSecret(v.Token),
			"teamId":        pulumi.String(v.TeamID),
			"projectName":   pulumi.String(v.Project),
			"adoptExisting": pulumi.Bool(b.spec.Adopt),
		}
		if v.APIURL != "" {
			vercel["apiUrl"] = pulumi.String(v.APIURL)
		}
		props["vercelWeb"] = vercel
	}
	if backend := b.spec.backend(); backend != nil {
		if sandbox := backend.preflight(b); sandbox != nil {
			props["sandbox"] = sandbox
		}
	}
	return props
}

// programRunKey is the context key of the run a Construct serves.
type programRunKey struct{}

// WithProgramRun marks ctx as serving the program run whose resource
// monitor is at monitor: each run of the engine (a preview, an up) has a
// monitor of its own, so the names components claim are scoped to one run
// of one program even when one plugin process serves several.
func WithProgramRun(ctx context.Context, monitor string) context.Context {
	return context.WithValue(ctx, programRunKey{}, monitor)
}

// nameClaim is a name one component of a run holds.
type nameClaim struct {
	component string // the component's resource name
	field     string // the field the name comes from
}

// claims are the names claimed, by run, then by name.
var claims = struct {
	sync.Mutex
	byRun map[string]map[string]nameClaim
}{byRun: map[string]map[string]nameClaim{}}

// claimedNames are the names an installation's plan takes, each with the
// field it comes from: its identity (prefix and deployment name, from which
// every Cloudflare name is made) and every remote name, since an explicit
// one (media.bucketName, a Vercel project name) can meet another's.
func claimedNames(plan *installPlan) map[string]string {
	names := map[string]string{
		fmt.Sprintf("installation %s/%s", plan.Prefix, plan.DeploymentName): "deploymentName",
		"D1 database " + plan.D1Name:                                        "deploymentName",
	}
	for _, r := range plan.KV {
		names["KV namespace "+r.Name] = "deploymentName"
	}
	for _, r := range plan.R2 {
		names["R2 bucket "+r.Name] = "deploymentName"
	}
	for _, r := range plan.Queues {
		names["queue "+r.Name] = "deploymentName"
	}
	for _, w := range plan.Workers {
		names["worker "+w.Name] = "deploymentName"
	}
	if plan.Web != nil {
		names["worker "+plan.Web.Name] = "deploymentName"
	}
	if v := plan.VercelWeb; v != nil {
		names[fmt.Sprintf("Vercel project %s of team %s", v.Project, v.TeamID)] = "web.vercel.projectName"
	}
	return names
}

// claimNames records the names of component name's plan for the run ctx
// serves, and refuses, naming the field and the other component, any name
// another component of the run already holds. A component constructed
// again in the same run (the same name) replaces its own claims. Without a
// run (a program run with mocks) nothing is checked.
func claimNames(ctx context.Context, name string, plan *installPlan) error {
	run, _ := ctx.Value(programRunKey{}).(string)
	if run == "" {
		return nil
	}
	claims.Lock()
	defer claims.Unlock()
	held := claims.byRun[run]
	if held == nil {
		held = map[string]nameClaim{}
		claims.byRun[run] = held
	}
	want := claimedNames(plan)
	var errs problems
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if c, ok := held[n]; ok && c.component != name {
			field := want[n]
			errs.add(field, "OpenInspect %q of this program already claims the %s (its %s): two installations with the same "+
				"names would overwrite each other's resources; give one of them another %s (or namePrefix)",
				c.component, n, c.field, field)
		}
	}
	if len(errs) > 0 {
		return specError(errs)
	}
	for n, c := range held {
		if c.component == name {
			delete(held, n)
		}
	}
	for n, field := range want {
		held[n] = nameClaim{component: name, field: field}
	}
	return nil
}
