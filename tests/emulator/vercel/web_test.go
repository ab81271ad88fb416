package vercel_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

func vercelError(t *testing.T, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "Vercel's error shape {error: {code, message}}: %v", body)
	assert.NotEmpty(t, e["message"])
	code, _ := e["code"].(string)
	return code
}

// TestProjectsEnvAndErrorShapes: Vercel's error shapes and statuses on the
// web routes (401, 403 for another team, 409 on a taken name, ENV_CONFLICT,
// 404), team scoping, a variable updated in place, a sensitive value never
// answered, a fault on a Vercel route, and state kept across a restart.
func TestProjectsEnvAndErrorShapes(t *testing.T) {
	dir := t.TempDir()
	a := serve(t, dir, vercel.Options{})

	status, body := a.callAs("", http.MethodGet, "/v9/projects/x", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	vercelError(t, body)
	status, body = a.call(http.MethodGet, "/v9/projects/x?teamId=team_other", nil)
	assert.Equal(t, http.StatusForbidden, status)
	vercelError(t, body)
	status, body = a.call(http.MethodGet, "/v9/projects/nothing", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "not_found", vercelError(t, body))

	status, created := a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "open-inspect-a", "framework": "nextjs",
		"rootDirectory": "packages/web"})
	require.Equal(t, http.StatusOK, status, "%v", created)
	id := created["id"].(string)
	assert.Equal(t, vercel.DefaultTeamID, created["accountId"])
	status, body = a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "open-inspect-a"})
	assert.Equal(t, http.StatusConflict, status)
	assert.Equal(t, "conflict", vercelError(t, body))
	status, body = a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "Not A Name"})
	assert.Equal(t, http.StatusBadRequest, status)
	vercelError(t, body)

	status, env := a.call(http.MethodPost, "/v10/projects/"+id+"/env", map[string]any{"key": "SERVICE_AUTH_SECRET",
		"value": "s3cret-value", "type": "sensitive", "target": []string{"production", "preview"}})
	require.Equal(t, http.StatusCreated, status, "%v", env)
	envID := env["created"].(map[string]any)["id"].(string)
	assert.Empty(t, env["created"].(map[string]any)["value"], "a sensitive value is never answered")
	status, body = a.call(http.MethodPost, "/v10/projects/open-inspect-a/env", map[string]any{"key": "SERVICE_AUTH_SECRET",
		"value": "x", "type": "sensitive", "target": []string{"preview"}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "ENV_CONFLICT", vercelError(t, body))
	status, _ = a.call(http.MethodPatch, "/v9/projects/"+id+"/env/"+envID, map[string]any{"value": "rotated-value"})
	require.Equal(t, http.StatusOK, status)
	status, list := a.call(http.MethodGet, "/v10/projects/"+id+"/env?decrypt=true", nil)
	require.Equal(t, http.StatusOK, status)
	envs := list["envs"].([]any)
	require.Len(t, envs, 1)
	assert.Equal(t, envID, envs[0].(map[string]any)["id"], "updated in place")
	assert.Empty(t, envs[0].(map[string]any)["value"])

	a.core.InjectFault(core.Fault{Route: "GET " + vercel.APIPrefix + "/v9/projects/{idOrName}", Kind: core.FaultServerError, Status: 503, Times: 1})
	status, body = a.call(http.MethodGet, "/v9/projects/"+id, nil)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	vercelError(t, body)
	counts := a.core.Counts()
	assert.Equal(t, 4, counts["GET "+vercel.APIPrefix+"/v9/projects/{idOrName}"], "every call counted, refused and faulted ones too: %v", counts)

	// Another team's token sees nothing of this team's.
	b := serve(t, dir, vercel.Options{Tokens: map[string]string{"other-token": "team_other"}})
	status, _ = b.callAs("other-token", http.MethodGet, "/v9/projects/"+id, nil)
	assert.Equal(t, http.StatusNotFound, status, "team scoping")
	inv := b.svc.Inventory()
	require.Len(t, inv.Projects, 1, "the state file kept the project across a restart")
	assert.Equal(t, "open-inspect-a", inv.Projects[0].Name)
	assert.Equal(t, "sensitive", inv.Projects[0].Env[0].Type)
	assert.Empty(t, inv.Projects[0].Env[0].Value)
}

// TestDeploymentBuildsAndServes: a deployment whose tree lacks the Next
// app fails with the reason; a complete one builds, takes the production
// alias and is served on its hosts; missing_files names only what the team
// lacks; deleting the project removes its deployments.
func TestDeploymentBuildsAndServes(t *testing.T) {
	c := core.New()
	svc, err := vercel.New(vercel.Options{BuildTime: 30 * time.Millisecond}, t.TempDir(), c)
	require.NoError(t, err)
	svc.Register()
	a := &api{t: t, svc: svc, core: c}
	srv := httpServer(t, svc.ServeHosts(c.Mux()))
	a.url = srv

	status, p := a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "web", "framework": "nextjs", "rootDirectory": "packages/web",
		"installCommand": "cd ../.. && npm install && npm run build -w @open-inspect/shared", "buildCommand": "next build"})
	require.Equal(t, http.StatusOK, status)
	status, _ = a.call(http.MethodPost, "/v10/projects/web/env", map[string]any{"key": "NEXT_PUBLIC_APP_NAME", "value": "Acme <Inspect>",
		"type": "plain", "target": []string{"production"}})
	require.Equal(t, http.StatusCreated, status)

	tree := map[string]string{
		"package.json":                   `{"workspaces":["packages/*"]}`,
		"package-lock.json":              `{}`,
		"packages/shared/package.json":   `{"name":"@open-inspect/shared"}`,
		"packages/web/package.json":      `{"dependencies":{"next":"16.0.0"}}`,
		"packages/web/next.config.mjs":   `export default {}`,
		"packages/web/app/page.jsx":      `export default () => null`,
		"packages/web/app/layout.jsx":    `export default ({children}) => children`,
		"packages/web/public/robots.txt": "",
	}
	var files []map[string]any
	upload := func(body string) {
		sum := sha1.Sum([]byte(body))
		resp := a.request(http.MethodPost, "/v2/files", vercel.DefaultToken, bytes.NewReader([]byte(body)),
			map[string]string{"x-vercel-digest": hex.EncodeToString(sum[:]), "Content-Type": "application/octet-stream"})
		st, _ := decode(t, resp)
		require.Equal(t, http.StatusOK, st)
	}
	for path, body := range tree {
		sum := sha1.Sum([]byte(body))
		files = append(files, map[string]any{"file": path, "sha": hex.EncodeToString(sum[:]), "size": len(body)})
	}
	deploy := func(fs []map[string]any) (int, map[string]any) {
		return a.call(http.MethodPost, "/v13/deployments", map[string]any{"name": "web", "project": p["id"], "target": "production", "files": fs})
	}
	status, body := deploy(files)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, "missing_files", vercelError(t, body))
	missing := body["error"].(map[string]any)["missing"].([]any)
	distinct := map[any]bool{}
	for _, f := range files {
		distinct[f["sha"]] = true
	}
	assert.Len(t, missing, len(distinct), "each content the team lacks, once")
	for _, body := range tree {
		upload(body)
	}
	wait := func(id string) map[string]any {
		var d map[string]any
		require.Eventually(t, func() bool {
			_, d = a.call(http.MethodGet, "/v13/deployments/"+id, nil)
			return d["readyState"] != "BUILDING"
		}, 5*time.Second, 10*time.Millisecond)
		return d
	}

	// Without the app directory, the build fails with the reason.
	var partial []map[string]any
	for _, f := range files {
		if f["file"] != "packages/web/app/page.jsx" && f["file"] != "packages/web/app/layout.jsx" {
			partial = append(partial, f)
		}
	}
	status, d := deploy(partial)
	require.Equal(t, http.StatusOK, status, "%v", d)
	failed := wait(d["id"].(string))
	assert.Equal(t, "ERROR", failed["readyState"])
	assert.Contains(t, failed["errorMessage"], "`pages` or `app` directory")

	status, d = deploy(files)
	require.Equal(t, http.StatusOK, status, "%v", d)
	ready := wait(d["id"].(string))
	require.Equal(t, "READY", ready["readyState"], "%v", ready)
	aliases := ready["alias"].([]any)
	require.NotEmpty(t, aliases)
	page := hostGet(t, srv, aliases[0].(string))
	assert.Contains(t, page, "<title>Acme &lt;Inspect&gt;</title>", "the value the build saw, escaped")
	assert.Contains(t, hostGet(t, srv, ready["url"].(string)), "Acme")

	resp := a.request(http.MethodDelete, "/v9/projects/web", vercel.DefaultToken, nil, nil)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	status, _ = a.call(http.MethodGet, "/v13/deployments/"+d["id"].(string), nil)
	assert.Equal(t, http.StatusNotFound, status, "the project's deployments went with it")
	assert.True(t, svc.Inventory().Empty())
	assert.Positive(t, svc.Inventory().Uploads[vercel.DefaultTeamID])
}

func httpServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// hostGet asks the emulator for / as host (what a browser resolving
// *.vercel.localhost to loopback sends).
func hostGet(t *testing.T, base, host string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/", nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
	return string(raw)
}

// TestDeploymentListFilters: GET /v6/deployments lists the team's
// deployments newest first with the meta their creates set, filtered by
// project, target, state and meta-<key> (every one given must match),
// pages by limit with pagination.next as the next page's until, and
// refuses a bad limit or state and an unknown project.
func TestDeploymentListFilters(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{BuildTime: time.Hour})
	status, p := a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "web", "framework": "nextjs"})
	require.Equal(t, http.StatusOK, status)
	status, _ = a.call(http.MethodPost, "/v11/projects", map[string]any{"name": "other", "framework": "nextjs"})
	require.Equal(t, http.StatusOK, status)
	const manifest = `{"dependencies":{"next":"16.0.0"}}`
	sum := sha1.Sum([]byte(manifest))
	resp := a.request(http.MethodPost, "/v2/files", vercel.DefaultToken, bytes.NewReader([]byte(manifest)),
		map[string]string{"x-vercel-digest": hex.EncodeToString(sum[:])})
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	files := []map[string]any{{"file": "package.json", "sha": hex.EncodeToString(sum[:]), "size": len(manifest)}}
	deploy := func(project, target string, meta map[string]string) string {
		t.Helper()
		status, d := a.call(http.MethodPost, "/v13/deployments", map[string]any{"name": project, "project": project,
			"target": target, "files": files, "meta": meta})
		require.Equal(t, http.StatusOK, status, "%v", d)
		assert.Equal(t, meta, stringMap(d["meta"]), "the create answers the meta it set")
		time.Sleep(2 * time.Millisecond) // distinct creation times, as the list orders by them
		return d["id"].(string)
	}
	first := deploy("web", "production", map[string]string{"digest": "aaa", "by": "openinspect"})
	second := deploy("web", "production", map[string]string{"digest": "bbb", "by": "openinspect"})
	third := deploy("web", "production", map[string]string{"digest": "aaa", "by": "someone"})
	preview := deploy("web", "preview", map[string]string{"digest": "aaa", "by": "openinspect"})
	deploy("other", "production", map[string]string{"digest": "aaa", "by": "openinspect"})

	list := func(query string) []string {
		t.Helper()
		status, body := a.call(http.MethodGet, "/v6/deployments?"+query, nil)
		require.Equal(t, http.StatusOK, status, "%s: %v", query, body)
		var uids []string
		for _, d := range body["deployments"].([]any) {
			m := d.(map[string]any)
			uids = append(uids, m["uid"].(string))
			assert.Equal(t, "BUILDING", m["readyState"])
			assert.Equal(t, m["readyState"], m["state"])
			assert.NotNil(t, m["meta"])
		}
		return uids
	}
	assert.Equal(t, []string{third, second, first}, list("projectId="+p["id"].(string)+"&target=production"), "newest first")
	assert.Equal(t, []string{third, second, first}, list("projectId=web&target=production"), "a project by name")
	assert.Equal(t, []string{preview, third, first}, list("projectId=web&meta-digest=aaa"))
	assert.Equal(t, []string{first}, list("projectId=web&target=production&meta-digest=aaa&meta-by=openinspect"),
		"every meta filter must match")
	assert.Empty(t, list("projectId=web&meta-digest=zzz"))
	assert.Empty(t, list("projectId=web&state=READY,ERROR"))
	assert.Len(t, list("projectId=web&state=building"), 4)
	assert.Len(t, list(""), 5, "the team's every deployment")

	status, page := a.call(http.MethodGet, "/v6/deployments?projectId=web&limit=2", nil)
	require.Equal(t, http.StatusOK, status)
	pagination := page["pagination"].(map[string]any)
	assert.EqualValues(t, 2, pagination["count"])
	require.NotNil(t, pagination["next"], "more pages")
	next := strconv.FormatInt(int64(pagination["next"].(float64)), 10)
	assert.Equal(t, []string{second, first}, list("projectId=web&limit=2&until="+next), "the next page")
	status, page = a.call(http.MethodGet, "/v6/deployments?projectId=web&limit=2&until="+next, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Nil(t, page["pagination"].(map[string]any)["next"], "the last page")

	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "state=DONE", "until=soon"} {
		status, body := a.call(http.MethodGet, "/v6/deployments?"+bad, nil)
		assert.Equal(t, http.StatusBadRequest, status, bad)
		vercelError(t, body)
	}
	status, body := a.call(http.MethodGet, "/v6/deployments?projectId=nothing", nil)
	assert.Equal(t, http.StatusNotFound, status)
	vercelError(t, body)
	status, body = a.call(http.MethodPost, "/v13/deployments", map[string]any{"name": "web", "project": "web", "files": files,
		"meta": map[string]any{"n": 1}})
	assert.Equal(t, http.StatusBadRequest, status, "meta values are strings")
	vercelError(t, body)
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := map[string]string{}
	for k, x := range m {
		out[k], _ = x.(string)
	}
	return out
}
