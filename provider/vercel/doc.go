// Package vercel is the family of the web UI on Vercel: VercelProject (a
// project with its build settings, environment variables and domain) and
// VercelDeployment (upstream's web source uploaded through the files API and
// deployed to production, gated by a digest). Upstream's Terraform creates
// the project and its variables (modules/vercel-project); its CI deploys
// the code with the Vercel CLI, which VercelDeployment replaces.
//
// It may import internal/web/vercelapi and internal/family; no other family.
// The token is an input of each resource (the component passes
// web.vercel.token), so the provider's configuration has no Vercel key.
package vercel
