package emulator_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/outbound"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

// requireWorkerd fails the test when no workerd binary is found, saying how
// to install one: tests that run scripts never skip.
func requireWorkerd(t *testing.T) {
	t.Helper()
	if _, err := workerd.Find(""); err != nil {
		t.Fatalf("this test runs scripts in workerd: %v (run .ci/workerd-tools.sh, or make test, which puts it on PATH)", err)
	}
}

// outboundJS fetches what its request's ?url= names (method and body from
// ?method= and ?body=) and answers what came back; /redirect and /json send
// a browser to GitHub's authorize page the two ways a sign-in flow does.
const outboundJS = `
export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/redirect") {
      return Response.redirect("https://github.com/login/oauth/authorize?client_id=demo-oauth-client-id&state=s1", 302);
    }
    if (url.pathname === "/json") {
      return Response.json({ url: "https://github.com/login/oauth/authorize?client_id=demo-oauth-client-id&state=s2", redirect: false });
    }
    const init = { method: url.searchParams.get("method") || "GET", redirect: "manual" };
    if (url.searchParams.has("body")) {
      init.body = url.searchParams.get("body");
      init.headers = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
    }
    try {
      const res = await fetch(url.searchParams.get("url"), init);
      return Response.json({ status: res.status, body: await res.text() });
    } catch (e) {
      return Response.json({ threw: String(e) }, { status: 500 });
    }
  },
};`

const peerJS = `export default { fetch(request) { return new Response("peer answered " + new URL(request.url).pathname); } };`

// TestScriptsFetchThroughTheOutboundGateway runs a fixture worker in
// workerd and checks where each of its fetch() calls goes: GitHub's hosts
// to the stand-in (its API and its token exchange, answered in GitHub's
// forms), a Modal web endpoint to the Modal family, another script's
// workers.localhost URL to that script, and any other host refused with a
// clear error, every one in the outbound log; and that the worker's
// redirect and JSON answer sending a browser to GitHub's authorize page are
// pointed at the stand-in's https origin.
func TestScriptsFetchThroughTheOutboundGateway(t *testing.T) {
	requireWorkerd(t)
	s := start(t, emulator.Options{Logf: t.Logf})
	c := newClient(s)
	mustUpload(t, c, "ob-peer", M{"main_module": "index.js", "compatibility_date": "2025-01-01"}, mod{"index.js", "application/javascript+module", peerJS})
	mustUpload(t, c, "ob-fetcher", M{"main_module": "index.js", "compatibility_date": "2025-01-01", "compatibility_flags": []string{"nodejs_compat"}},
		mod{"index.js", "application/javascript+module", outboundJS})
	fetcher := s.Workers().WorkerURL("ob-fetcher")
	fetch := func(target string, extra url.Values) (int, string) {
		t.Helper()
		q := url.Values{"url": {target}}
		for k, v := range extra {
			q[k] = v
		}
		res, body := do(t, http.MethodGet, fetcher+"/?"+q.Encode(), "", "")
		require.Equal(t, http.StatusOK, res.StatusCode, body)
		var out struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &out), body)
		return out.Status, out.Body
	}

	status, body := fetch("https://api.github.com/user", nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.JSONEq(t, `{"message":"Requires authentication","documentation_url":"https://docs.github.com/rest/users/users#get-the-authenticated-user","status":"401"}`, body)
	status, body = fetch("https://github.com/login/oauth/access_token", url.Values{"method": {"POST"}, "body": {"client_id=demo-oauth-client-id&client_secret=wrong&code=x"}})
	assert.Equal(t, http.StatusOK, status, "GitHub answers a refused exchange with 200")
	assert.Contains(t, body, `"error":"incorrect_client_credentials"`)
	status, body = fetch("https://openinspect-emulator--open-inspect-api-health.modal.run/", nil)
	assert.Equal(t, http.StatusNotFound, status, "no Modal app is deployed: Modal's own answer")
	assert.Contains(t, body, "modal-http: invalid function call")
	status, body = fetch(s.Workers().WorkerURL("ob-peer")+"/hello", nil)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "peer answered /hello", body)
	status, body = fetch("https://api.openai.com/v1/responses?key=abc", nil)
	assert.Equal(t, http.StatusBadGateway, status)
	assert.Contains(t, body, "the local cloud sends no request off this machine")
	assert.Contains(t, body, "api.openai.com")
	assert.NotContains(t, body, "abc", "a secret-looking query value is redacted")

	entries := s.Outbound().Entries()
	require.Len(t, entries, 5, "%v", entries)
	want := []struct {
		url, to string
		status  int
		refused bool
	}{
		{"https://api.github.com/user", "github", 401, false},
		{"https://github.com/login/oauth/access_token", "github", 200, false},
		{"https://openinspect-emulator--open-inspect-api-health.modal.run/", "modal", 404, false},
		{s.Workers().WorkerURL("ob-peer") + "/hello", "emulator", 200, false},
		{"https://api.openai.com/v1/responses?key=REDACTED", "", 502, true},
	}
	for i, w := range want {
		assert.Equal(t, emulator.DefaultAccountID+"/ob-fetcher", entries[i].Script)
		assert.Equal(t, w.url, entries[i].URL)
		assert.Equal(t, w.to, entries[i].To, entries[i].URL)
		assert.Equal(t, w.status, entries[i].Status, entries[i].URL)
		assert.Equal(t, w.refused, entries[i].Refused, entries[i].URL)
	}
	var served []outbound.Entry
	res, raw := do(t, http.MethodGet, s.URL()+"/__emulator/outbound", "", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.NoError(t, json.Unmarshal([]byte(raw), &served))
	assert.Len(t, served, 5)

	// What the worker sends a browser to.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Transport: loopback.Transport()}
	resp, err := noFollow.Get(fetcher + "/redirect")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	browserOrigin := s.GitHub().BrowserURL()
	require.True(t, strings.HasPrefix(browserOrigin, "https://"+github.BrowserHost+":"), browserOrigin)
	assert.Equal(t, browserOrigin+"/login/oauth/authorize?client_id=demo-oauth-client-id&state=s1", resp.Header.Get("Location"))
	res, raw = do(t, http.MethodGet, fetcher+"/json", "", "")
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.JSONEq(t, `{"url":"`+browserOrigin+`/login/oauth/authorize?client_id=demo-oauth-client-id&state=s2","redirect":false}`, raw)
}
