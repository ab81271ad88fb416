package vercelapi_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// emulator serves the emulator's Vercel family and returns a client of it.
func emulator(t *testing.T) (*vercelapi.Client, *vercel.Service, *core.Core) {
	t.Helper()
	c := core.New()
	svc, err := vercel.New(vercel.Options{BuildTime: 50 * time.Millisecond}, t.TempDir(), c)
	require.NoError(t, err)
	svc.Register()
	srv := httptest.NewServer(svc.ServeHosts(c.Mux()))
	t.Cleanup(srv.Close)
	cl, err := vercelapi.New(srv.URL+vercel.APIPrefix, vercel.DefaultToken, vercel.DefaultTeamID)
	require.NoError(t, err)
	return cl, svc, c
}

var settings = vercelapi.ProjectSettings{Framework: "nextjs", RootDirectory: "packages/web",
	InstallCommand: "cd ../.. && npm install && npm run build -w @open-inspect/shared", BuildCommand: "next build"}

func sha(b []byte) string {
	s := sha1.Sum(b)
	return hex.EncodeToString(s[:])
}

// tree is a complete Next app at packages/web with the shared workspace.
var tree = map[string]string{
	"package.json":                  `{"name":"root","workspaces":["packages/*"]}`,
	"package-lock.json":             `{"lockfileVersion":3}`,
	"packages/shared/package.json":  `{"name":"@open-inspect/shared"}`,
	"packages/web/package.json":     `{"name":"@open-inspect/web","dependencies":{"next":"16.0.0"}}`,
	"packages/web/next.config.ts":   `export default {}`,
	"packages/web/src/app/page.tsx": `export default function Page() { return null }`,
}

// TestClientAgainstTheEmulator: a project with upstream's settings, its
// variables (a conflict answered ENV_CONFLICT, an update in place), the
// files Vercel lacks asked for by missing_files and uploaded once, a
// production deployment that builds and takes the project's alias, found
// by its meta and by its state in the project's list, its events, a
// failing build's message, and delete.
func TestClientAgainstTheEmulator(t *testing.T) {
	cl, svc, c := emulator(t)
	ctx := t.Context()

	p, err := cl.CreateProject(ctx, "open-inspect-test", settings)
	require.NoError(t, err)
	assert.Equal(t, settings, p.Settings())
	_, err = cl.CreateProject(ctx, "open-inspect-test", settings)
	assert.ErrorIs(t, err, vercelapi.ErrConflict)

	id, err := cl.CreateEnv(ctx, p.ID, vercelapi.Env{Key: "NEXT_PUBLIC_APP_NAME", Value: "Open-Inspect", Type: "plain", Target: vercelapi.Targets})
	require.NoError(t, err)
	_, err = cl.CreateEnv(ctx, p.ID, vercelapi.Env{Key: "NEXT_PUBLIC_APP_NAME", Value: "x", Type: "plain", Target: []string{"preview"}})
	require.Error(t, err)
	assert.True(t, vercelapi.IsEnvConflict(err), "%v", err)
	_, err = cl.CreateEnv(ctx, p.ID, vercelapi.Env{Key: "SERVICE_AUTH_SECRET", Value: "s3cr3t-value", Type: "sensitive", Target: vercelapi.Targets})
	require.NoError(t, err)
	require.NoError(t, cl.UpdateEnv(ctx, p.ID, id, vercelapi.Env{Value: "Acme", Type: "plain", Target: vercelapi.Targets}))
	envs, err := cl.ListEnv(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, envs, 2)
	byKey := map[string]vercelapi.Env{}
	for _, e := range envs {
		byKey[e.Key] = e
	}
	assert.Equal(t, id, byKey["NEXT_PUBLIC_APP_NAME"].ID, "updated in place")
	assert.Equal(t, "Acme", byKey["NEXT_PUBLIC_APP_NAME"].Value)
	assert.Empty(t, byKey["SERVICE_AUTH_SECRET"].Value, "a sensitive value is never read back")

	var files []vercelapi.DeploymentFile
	content := map[string][]byte{}
	for path, body := range tree {
		files = append(files, vercelapi.DeploymentFile{File: path, SHA: sha([]byte(body)), Size: int64(len(body))})
		content[sha([]byte(body))] = []byte(body)
	}
	_, err = cl.CreateDeployment(ctx, p.Name, p.ID, nil, files)
	var missing *vercelapi.MissingFilesError
	require.ErrorAs(t, err, &missing)
	assert.Len(t, missing.SHAs, len(tree))
	for _, s := range missing.SHAs {
		require.NoError(t, cl.UploadFile(ctx, s, content[s]))
	}
	assert.Error(t, cl.UploadFile(ctx, sha([]byte("other")), []byte("not it")), "a digest that does not match is refused")
	marker := map[string]string{"openinspectDigest": "d1"}
	d, err := cl.CreateDeployment(ctx, p.Name, p.ID, marker, files)
	require.NoError(t, err)
	assert.Equal(t, "BUILDING", d.ReadyState)
	listed, err := cl.Deployments(ctx, vercelapi.DeploymentQuery{ProjectID: p.ID, Target: "production", Meta: marker, Limit: 1})
	require.NoError(t, err)
	require.Len(t, listed, 1, "found by its meta")
	assert.Equal(t, d.ID, listed[0].UID)
	assert.Equal(t, "BUILDING", listed[0].Status())
	assert.Equal(t, marker, listed[0].Meta)
	none, err := cl.Deployments(ctx, vercelapi.DeploymentQuery{ProjectID: p.ID, Meta: map[string]string{"openinspectDigest": "d2"}})
	require.NoError(t, err)
	assert.Empty(t, none)
	require.Eventually(t, func() bool {
		d, err = cl.GetDeployment(ctx, d.ID)
		return err == nil && d.ReadyState == "READY"
	}, 5*time.Second, 20*time.Millisecond)
	require.NotEmpty(t, d.Alias)
	assert.True(t, strings.HasPrefix(d.Alias[0], "open-inspect-test.vercel.localhost:"), d.Alias[0])
	events, err := cl.Events(ctx, d.ID)
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Contains(t, events[len(events)-1].Text, "Deployment completed")

	// The same files again: nothing missing, one more deployment.
	svc.FailNextDeployment("Type error: arranged")
	failed, err := cl.CreateDeployment(ctx, p.Name, p.ID, nil, files)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		failed, err = cl.GetDeployment(ctx, failed.ID)
		return err == nil && failed.ReadyState == "ERROR"
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, "Type error: arranged", failed.ErrorMessage)
	d, err = cl.GetDeployment(ctx, d.ID)
	require.NoError(t, err)
	assert.NotEmpty(t, d.Alias, "a failed build leaves the production alias where it was")
	ready, err := cl.Deployments(ctx, vercelapi.DeploymentQuery{ProjectID: p.ID, Target: "production", States: []string{"READY"}})
	require.NoError(t, err)
	require.Len(t, ready, 1, "the ready one, not the failed one")
	assert.Equal(t, d.ID, ready[0].UID)
	assert.Equal(t, len(tree), svc.Inventory().Uploads[vercel.DefaultTeamID], "each file uploaded once")

	counts := c.Counts()
	assert.Equal(t, len(tree)+1, counts["POST "+vercel.APIPrefix+"/v2/files"], "%v", counts)

	require.NoError(t, cl.DeleteProject(ctx, p.ID))
	_, err = cl.GetProject(ctx, p.ID)
	assert.ErrorIs(t, err, vercelapi.ErrNotFound)
	assert.True(t, svc.Inventory().Empty())
}

// TestClientErrors: a bad token is 401, another team 403, each with
// Vercel's message; a tree that is not a Next app fails its build with
// Vercel's reason.
func TestClientErrors(t *testing.T) {
	cl, _, _ := emulator(t)
	ctx := t.Context()
	bad, err := vercelapi.New(strings.TrimSuffix(cl.Base, "/"), "wrong-token", "")
	require.NoError(t, err)
	_, err = bad.GetProject(ctx, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	other, err := vercelapi.New(cl.Base, vercel.DefaultToken, "team_other")
	require.NoError(t, err)
	_, err = other.GetProject(ctx, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "403")
	assert.False(t, errors.Is(err, vercelapi.ErrNotFound))

	p, err := cl.CreateProject(ctx, "not-next", settings)
	require.NoError(t, err)
	body := []byte(`{"name":"root"}`)
	require.NoError(t, cl.UploadFile(ctx, sha(body), body))
	d, err := cl.CreateDeployment(ctx, p.Name, p.ID, nil, []vercelapi.DeploymentFile{{File: "package.json", SHA: sha(body), Size: int64(len(body))}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		d, err = cl.GetDeployment(ctx, d.ID)
		return err == nil && d.ReadyState == "ERROR"
	}, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, d.ErrorMessage, "No workspaces found", "the install command's workspace is missing")
}
