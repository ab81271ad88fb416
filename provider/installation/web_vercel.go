package installation

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/vercel"
)

// The web UI on Vercel (web.platform vercel), upstream's default web
// platform: the project its Terraform creates (modules/vercel-project at
// the pin: framework nextjs, root packages/web, its install and build
// commands, six variables for production and preview) and, beyond
// upstream, a production deployment of upstream's web source that Vercel
// builds, instead of a deployment by hand with the Vercel CLI. Vercel's
// build inlines the NEXT_PUBLIC_* values from the project's variables, so
// nothing is substituted here.

// Upstream's project settings.
const (
	vercelFramework      = "nextjs"
	vercelRootDirectory  = "packages/web"
	vercelInstallCommand = "cd ../.. && npm install && npm run build -w @open-inspect/shared"
	vercelBuildCommand   = "next build"
)

// vercelVariables are upstream's variable names, in its order (kept "to
// keep count indices stable"): the sensitive one last.
var vercelVariables = []string{"CONTROL_PLANE_URL", "NEXT_PUBLIC_WS_URL", "NEXT_PUBLIC_SANDBOX_PROVIDER",
	"NEXT_PUBLIC_APP_NAME", "NEXT_PUBLIC_APP_ICON_URL", webServiceAuthSecret}

// plannedVercelWeb is the web on Vercel.
type plannedVercelWeb struct {
	Project string
	TeamID  string
	APIURL  string
	Domain  string
	Token   pulumi.StringInput
	// Source is the directory holding upstream's web source (a checkout
	// or the embedded artefacts).
	Source string
}

// resolveVercelWeb plans the project and the deployment when the spec puts
// the web on Vercel: the source must hold what Vercel's build needs (the
// web and shared packages, the root manifest and lock), checked before
// anything is registered.
func resolveVercelWeb(plan *installPlan, s *spec, emb *embedded) []error {
	if s.Web == nil || s.Web.OnPlatform() != web.PlatformVercel || s.Web.Vercel == nil {
		return nil
	}
	var errs problems
	v := s.Web.Vercel
	checkout := s.Upstream.Checkout
	field := "upstream.checkout"
	if emb != nil && checkout == emb.dir {
		field = "the embedded artefacts"
	}
	if dir := s.WebVercel.SourceDir; dir != "" {
		checkout, field = dir, "web.vercel.sourceDir"
	}
	if checkout == "" {
		errs.add("web.vercel", "no web source to deploy: this plugin embeds no upstream artefacts; set upstream.checkout "+
			"(or web.vercel.sourceDir) to a checkout of upstream at the pin (Vercel builds %s from it)", strings.Join(vercel.DefaultPaths, ", "))
		return errs
	}
	var missing []string
	for _, rel := range vercel.DefaultPaths {
		if _, err := os.Stat(filepath.Join(checkout, filepath.FromSlash(rel))); err != nil {
			missing = append(missing, rel)
		}
	}
	if _, err := os.Stat(filepath.Join(checkout, "packages", "web", "package.json")); err != nil && !slices.Contains(missing, "packages/web") {
		missing = append(missing, "packages/web/package.json")
	}
	if len(missing) > 0 {
		errs.add(field, "%s has no %s, which Vercel's build of the web needs (web.platform %q)", checkout,
			strings.Join(missing, ", "), web.PlatformVercel)
		return errs
	}
	plan.VercelWeb = &plannedVercelWeb{
		Project: s.WebVercel.ProjectName,
		TeamID:  v.TeamID,
		APIURL:  s.WebVercel.APIURL,
		Domain:  s.WebVercel.Domain,
		Token:   v.Token,
		Source:  checkout,
	}
	return errs
}

type (
	vercelProjectChild struct {
		pulumi.CustomResourceState
		ProjectID       pulumi.StringOutput `pulumi:"projectId"`
		VariablesDigest pulumi.StringOutput `pulumi:"variablesDigest"`
	}
	vercelDeploymentChild struct {
		pulumi.CustomResourceState
		ProductionURL pulumi.StringOutput `pulumi:"productionUrl"`
	}
)

// webOnVercel registers the project with upstream's settings and six
// variables, then its production deployment, and returns the deployment's
// production URL (the web's origin). It needs only the control plane's URL
// (WorkerUrls), not the control plane itself, so the control plane can be
// uploaded with this URL as WEB_APP_URL.
func (b *installer) webOnVercel(adopt bool) (pulumi.StringOutput, error) {
	v, plan := b.plan.VercelWeb, b.plan
	token := pulumi.ToSecret(v.Token).(pulumi.StringOutput)
	values := map[string]pulumi.StringInput{
		"CONTROL_PLANE_URL":            b.workerURL(controlPlane, urlFull),
		"NEXT_PUBLIC_WS_URL":           b.workerURL(controlPlane, urlWebSocket),
		"NEXT_PUBLIC_SANDBOX_PROVIDER": pulumi.String(plan.SandboxProvider),
		"NEXT_PUBLIC_APP_NAME":         pulumi.String(plan.AppName),
		"NEXT_PUBLIC_APP_ICON_URL":     pulumi.String(plan.AppIconURL),
	}
	plain := pulumi.StringMap{}
	for _, k := range vercelVariables[:len(vercelVariables)-1] {
		plain[k] = values[k]
	}
	props := pulumi.Map{
		"name":           pulumi.String(v.Project),
		"teamId":         pulumi.String(v.TeamID),
		"token":          token,
		"framework":      pulumi.String(vercelFramework),
		"rootDirectory":  pulumi.String(vercelRootDirectory),
		"installCommand": pulumi.String(vercelInstallCommand),
		"buildCommand":   pulumi.String(vercelBuildCommand),
		"variables":      plain,
		"sensitiveVariables": pulumi.ToSecret(pulumi.StringMap{
			webServiceAuthSecret: b.generated[webServiceAuthKey].Value,
		}),
		"adoptExisting": pulumi.Bool(adopt),
	}
	if v.APIURL != "" {
		props["apiUrl"] = pulumi.String(v.APIURL)
	}
	if v.Domain != "" {
		props["domain"] = pulumi.String(v.Domain)
	}
	project, err := register(b, "VercelProject", "vercel-project", props, &vercelProjectChild{})
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	dprops := pulumi.Map{
		"teamId":          pulumi.String(v.TeamID),
		"token":           token,
		"projectId":       project.ProjectID,
		"projectName":     pulumi.String(v.Project),
		"source":          pulumi.String(v.Source),
		"variablesDigest": project.VariablesDigest,
	}
	if v.APIURL != "" {
		dprops["apiUrl"] = pulumi.String(v.APIURL)
	}
	if v.Domain != "" {
		dprops["domain"] = pulumi.String(v.Domain)
	}
	deployment, err := register(b, "VercelDeployment", "vercel-deployment", dprops, &vercelDeploymentChild{},
		pulumi.DependsOn([]pulumi.Resource{project}))
	if err != nil {
		return pulumi.StringOutput{}, err
	}
	return deployment.ProductionURL, nil
}

// vercelWebURL is the web's origin on Vercel, for the control plane's
// WEB_APP_URL; only planned values refer to it.
func (b *installer) vercelWebURL() pulumi.StringOutput {
	if b.vercelURL == nil {
		panic(fmt.Sprintf("installation: the web on Vercel is not registered before %s refers to its URL", controlPlane))
	}
	return *b.vercelURL
}
