package vercel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/vercel"
	emvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/filetree"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// secretMarker stands for a developer's own secret in a local file.
const secretMarker = "LOCAL-SECRET-f3c1b0e9"

// webSourceWithLocalSecrets is upstream's web source as a developer's
// checkout holds it after working on it: local environment files with
// their own secrets, editor and version-control leftovers, and a
// .vercelignore of the project's.
func webSourceWithLocalSecrets(t *testing.T) string {
	return filetree.Write(t, map[string]string{
		"package.json":                  `{"name":"root","workspaces":["packages/*"]}`,
		"package-lock.json":             `{"lockfileVersion":3}`,
		"packages/shared/package.json":  `{"name":"@open-inspect/shared"}`,
		"packages/web/package.json":     `{"name":"@open-inspect/web","dependencies":{"next":"16.0.0"}}`,
		"packages/web/next.config.ts":   `export default {}`,
		"packages/web/src/app/page.tsx": `export default function Page() { return null }`,
		// What the Vercel CLI leaves out by default.
		".env.local":                             "GITHUB_CLIENT_SECRET=" + secretMarker,
		"packages/web/.env.local":                "SERVICE_AUTH_SECRET=" + secretMarker,
		"packages/web/.env.production.local":     "NEXTAUTH_SECRET=" + secretMarker,
		"packages/shared/.env.development.local": "TOKEN=" + secretMarker,
		"packages/web/.gitignore":                ".env*.local\n",
		"packages/web/.DS_Store":                 secretMarker,
		"packages/web/.vercel/project.json":      `{"orgId":"` + secretMarker + `"}`,
		"packages/web/src/.page.tsx.swp":         secretMarker,
		"packages/shared/__pycache__/x.pyc":      secretMarker,
		"packages/web/node_modules/next/x.js":    secretMarker,
		"packages/web/.open-next/worker.js":      secretMarker,
		// What the project's .vercelignore leaves out; a "!" rule brings
		// one file back, and cannot bring back a file under an ignored
		// directory (the CLI never walks into one).
		".vercelignore": "# the project's own\n./packages/web/certs/*.pem\n!packages/web/certs/public.pem\n" +
			"packages/web/private/\n!packages/web/private/readme.md\n*.key\n",
		"packages/web/certs/server.pem":   secretMarker,
		"packages/web/certs/public.pem":   "a public certificate",
		"packages/web/private/notes.txt":  secretMarker,
		"packages/web/private/readme.md":  secretMarker,
		"packages/shared/src/signing.key": secretMarker,
		// Kept: Vercel uploads .env (the CLI's list has only the .local
		// ones), and a name that merely contains ".env".
		"packages/web/.env":             "NEXT_PUBLIC_APP_NAME=Open-Inspect",
		"packages/web/src/env.local.ts": `export const local = true`,
	})
}

// TestSourceFilesLeaveOutWhatTheVercelCLIDoes: the files a deployment
// uploads are the Vercel CLI's: none of its default exclusions (local
// environment files first of all), none the source's .vercelignore names,
// and no file anywhere in the upload holds the developer's secret.
func TestSourceFilesLeaveOutWhatTheVercelCLIDoes(t *testing.T) {
	src := webSourceWithLocalSecrets(t)
	files, err := vercel.SourceFiles(src, vercel.DefaultPaths)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"package-lock.json", "package.json", "packages/shared/package.json",
		"packages/web/.env", "packages/web/certs/public.pem", "packages/web/next.config.ts",
		"packages/web/package.json", "packages/web/src/app/page.tsx", "packages/web/src/env.local.ts",
	}, files)
	for _, rel := range files {
		raw, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(rel)))
		require.NoError(t, err)
		assert.NotContains(t, string(raw), secretMarker, "%s would carry a local secret to Vercel", rel)
	}

	// A path given on its own is filtered too.
	only, err := vercel.SourceFiles(src, []string{"packages/web/.env.local", "packages/web/package.json"})
	require.NoError(t, err)
	assert.Equal(t, []string{"packages/web/package.json"}, only)
}

// TestSourceFilesUnderADirectoryBroughtBack: a .vercelignore that leaves
// out everything at the root but what it brings back with "!" (upstream's
// has this shape: the workspace files and packages) brings back those
// entries, not what lies below them: installed packages, the web's builds
// and local environment files under packages are still left out, as git and
// the Vercel CLI decide each directory level on its own. (A release's web
// source once carried packages/web/node_modules, .next and .open-next.)
func TestSourceFilesUnderADirectoryBroughtBack(t *testing.T) {
	src := filetree.Write(t, map[string]string{
		".vercelignore":                        "# only these at the root\n/*\n!package.json\n!package-lock.json\n!packages\n",
		"package.json":                         `{"name":"root","workspaces":["packages/*"]}`,
		"package-lock.json":                    `{"lockfileVersion":3}`,
		"terraform/main.tf":                    secretMarker,
		"packages/shared/package.json":         `{"name":"@open-inspect/shared"}`,
		"packages/shared/node_modules/x/x.js":  secretMarker,
		"packages/web/package.json":            `{"name":"@open-inspect/web"}`,
		"packages/web/src/packages/list.ts":    `export const list = []`,
		"packages/web/node_modules/next/x.js":  secretMarker,
		"packages/web/.next/server/page.js":    secretMarker,
		"packages/web/.open-next/worker.js":    secretMarker,
		"packages/web/.env.local":              "SERVICE_AUTH_SECRET=" + secretMarker,
		"packages/web/packages/node_modules/a": secretMarker,
	})
	files, err := vercel.SourceFiles(src, append(vercel.DefaultPaths, "terraform"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"package-lock.json", "package.json", "packages/shared/package.json",
		"packages/web/package.json", "packages/web/src/packages/list.ts",
	}, files)
}

// TestVercelDeploymentUploadsNoLocalSecret deploys the same source through
// the provider: the deployment holds only the files SourceFiles lists, and
// what reached the emulator's Vercel is only those.
func TestVercelDeploymentUploadsNoLocalSecret(t *testing.T) {
	h := harness(t)
	src := webSourceWithLocalSecrets(t)
	pu := providertest.URN(vercel.VercelProjectToken, "project")
	proj, err := h.Server.Create(p.CreateRequest{Urn: pu, Properties: providertest.Props(t, projectInputs(h, nil))})
	require.NoError(t, err)
	u := providertest.URN(vercel.VercelDeploymentToken, "deployment")
	in := providertest.Props(t, map[string]any{"teamId": emvercel.DefaultTeamID, "apiUrl": h.Emu.URL() + emvercel.APIPrefix,
		"token": emvercel.DefaultToken, "projectId": proj.ID, "projectName": "open-inspect-unit", "source": src,
		"variablesDigest": proj.Properties.Get("variablesDigest").AsString()})
	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: in})
	require.NoError(t, err)
	assert.Equal(t, 9, int(created.Properties.Get("files").AsNumber()))
	assert.Equal(t, 9, h.Emu.Counts()["POST "+emvercel.APIPrefix+"/v2/files"], "one upload per kept file")
	deployments := project(h, "open-inspect-unit").Deployments
	require.Len(t, deployments, 1)
	assert.Equal(t, 9, deployments[0].Files)
	assert.False(t, strings.Contains(created.Properties.GoString(), secretMarker))
}
