package emulator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuworkers "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	emuzones "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
)

const (
	otherAcct  = "2222222222222222bbbbbbbbbbbbbbbb"
	otherToken = "other-account-token"
)

// echoJS answers which script it is and the URL it saw.
func echoJS(name string) mod {
	return mod{"index.js", "application/javascript+module", fmt.Sprintf(`
export default {
  async fetch(request) {
    const u = new URL(request.url);
    return Response.json({ script: %q, host: u.host, path: u.pathname + u.search });
  },
};`, name)}
}

type echoed struct {
	Script, Host, Path string
}

// hostGet GETs target with the Host header host ("" keeps target's),
// dialling *.localhost on loopback as a browser would.
func hostGet(t *testing.T, target, host string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, target, nil)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	res, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, string(b)
}

func echoOf(t *testing.T, target, host string) echoed {
	t.Helper()
	status, _, body := hostGet(t, target, host)
	require.Equal(t, http.StatusOK, status, "%s (Host %q): %s", target, host, body)
	var e echoed
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e
}

// rawAPI is one v4 call with token, for what api() (the default token)
// cannot send.
func rawAPI(t *testing.T, s *emulator.Server, token, method, path string, body any) envelopeOf {
	t.Helper()
	req, err := http.NewRequest(method, s.CloudflareBaseURL()+path, bytes.NewReader(jsonBody(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var env envelopeOf
	require.NoError(t, json.NewDecoder(res.Body).Decode(&env))
	require.True(t, env.Success, "%s %s: %v", method, path, env.Errors)
	return env
}

type assetFile struct{ contentType, body string }

// uploadWithAssets runs the direct-upload flow for files, then uploads the
// script redeeming its completion token.
func uploadWithAssets(t *testing.T, s *emulator.Server, c *cloudflare.Client, name string, files map[string]assetFile, js mod) {
	t.Helper()
	manifest := M{}
	byHash := map[string]assetFile{}
	for p, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		hash := hex.EncodeToString(sum[:16])
		manifest[p] = M{"hash": hash, "size": len(f.body)}
		byHash[hash] = f
	}
	env := rawAPI(t, s, emulator.DefaultToken, http.MethodPost, scriptsPath+name+"/assets-upload-session", M{"manifest": manifest})
	var sess struct {
		JWT     string     `json:"jwt"`
		Buckets [][]string `json:"buckets"`
	}
	env.into(t, &sess)
	jwt := sess.JWT
	for _, bucket := range sess.Buckets {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, hash := range bucket {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf("form-data; name=%q; filename=%q", hash, hash))
			h.Set("Content-Type", byHash[hash].contentType)
			w, err := mw.CreatePart(h)
			require.NoError(t, err)
			_, err = w.Write([]byte(base64.StdEncoding.EncodeToString([]byte(byHash[hash].body))))
			require.NoError(t, err)
		}
		require.NoError(t, mw.Close())
		req, err := http.NewRequest(http.MethodPost, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/assets/upload?base64=true", &buf)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+sess.JWT)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var up envelopeOf
		require.NoError(t, json.NewDecoder(res.Body).Decode(&up))
		res.Body.Close()
		require.True(t, up.Success, "%v", up.Errors)
		var done struct {
			JWT string `json:"jwt"`
		}
		up.into(t, &done)
		if done.JWT != "" {
			jwt = done.JWT
		}
	}
	mustUpload(t, c, name, M{"main_module": "index.js", "compatibility_date": "2025-01-01", "bindings": []M{},
		"assets": M{"jwt": jwt, "config": M{}}}, js)
}

// Each script answers on its own origin with the path exactly as sent, its
// assets first: /_next/static/... at the origin's root reaches them. The
// /__workers/ alias still answers, and the emulator's own API and admin
// paths are unchanged.
func TestWorkersAnswerOnTheirOwnOrigin(t *testing.T) {
	s := start(t, emulator.Options{Logf: t.Logf})
	c := newClient(s)
	uploadWithAssets(t, s, c, "web", map[string]assetFile{
		"/_next/static/x.css": {"text/css", "body{color:red}"},
	}, echoJS("web"))
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	origin := "web.workers.localhost:" + u.Port()
	require.Equal(t, "http://"+origin, s.Workers().WorkerURL("web"))

	assert.Equal(t, echoed{"web", origin, "/"}, echoOf(t, s.Workers().WorkerURL("web"), ""))
	assert.Equal(t, echoed{"web", origin, "/deep/path?q=1"}, echoOf(t, s.Workers().WorkerURL("web")+"/deep/path?q=1", ""))
	// The path is the script's even where it names the emulator's API.
	assert.Equal(t, echoed{"web", origin, "/client/v4/user/tokens/verify"}, echoOf(t, s.Workers().WorkerURL("web")+"/client/v4/user/tokens/verify", ""))
	// With the account's subdomain, as on workers.dev.
	withSub := "web." + emuworkers.DefaultSubdomain + ".workers.localhost:" + u.Port()
	assert.Equal(t, echoed{"web", withSub, "/x"}, echoOf(t, "http://"+withSub+"/x", ""))
	status, _, body := hostGet(t, "http://web.nobody.workers.localhost:"+u.Port()+"/x", "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.JSONEq(t, `{"error":"no worker script named \"web\" in an account with workers.dev subdomain \"nobody\""}`, body)

	status, header, body := hostGet(t, s.Workers().WorkerURL("web")+"/_next/static/x.css", "")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "text/css", header.Get("Content-Type"))
	assert.Equal(t, "body{color:red}", body)

	// The path alias: the script sees the path after its name.
	assert.Equal(t, echoed{"web", u.Host, "/deep"}, echoOf(t, s.URL()+"/__workers/web/deep", ""))
	status, _, body = hostGet(t, s.URL()+"/__workers/web/_next/static/x.css", "")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "body{color:red}", body)

	// Counted under one key however the script was reached.
	s.ResetCounts()
	echoOf(t, s.Workers().WorkerURL("web")+"/counted", "")
	echoOf(t, s.URL()+"/__workers/web/counted", "")
	assert.Equal(t, map[string]int{"GET /__workers/{script_name}/counted": 2}, s.Counts())

	// A fault on that key applies to the host form too.
	s.InjectFault(emulator.Fault{Route: "GET /__workers/{script_name}/faulted", Kind: emulator.FaultServerError, Status: 503, Times: 1})
	status, _, body = hostGet(t, s.Workers().WorkerURL("web")+"/faulted", "")
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.JSONEq(t, `{"error":"Internal server error"}`, body)

	// The emulator's own address, by IP or as localhost, is the API.
	status, _, _ = hostGet(t, s.CloudflareBaseURL()+"user/tokens/verify", "")
	assert.Equal(t, http.StatusBadRequest, status, "no token: the API's own answer")
	status, _, body = hostGet(t, "http://localhost:"+u.Port()+"/__emulator/runtime", "")
	assert.Equal(t, http.StatusOK, status, body)

	status, _, body = hostGet(t, s.Workers().WorkerURL("ghost"), "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.JSONEq(t, `{"error":"no worker script named \"ghost\""}`, body)
}

// Two accounts' scripts of one name are told apart by the accounts'
// workers.dev subdomains; without one the name is ambiguous, as under
// /__workers/.
func TestWorkersOfTwoAccountsByTheirSubdomains(t *testing.T) {
	s := start(t, emulator.Options{Tokens: map[string]string{emulator.DefaultToken: acct, otherToken: otherAcct}})
	c := newClient(s)
	mustUpload(t, c, "twin", meta(), echoJS("twin-first"))
	rawAPI(t, s, otherToken, http.MethodPut, "accounts/"+otherAcct+"/workers/subdomain", M{"subdomain": "second"})
	ct, body := multipartBody(t, meta(), echoJS("twin-second"))
	_, err := newClient(s, option.WithAPIToken(otherToken)).Workers.Scripts.Update(context.Background(), "twin",
		workers.ScriptUpdateParams{AccountID: cloudflare.F(otherAcct)}, option.WithRequestBody(ct, body))
	require.NoError(t, err)
	u, err := url.Parse(s.URL())
	require.NoError(t, err)

	first := "http://twin." + emuworkers.DefaultSubdomain + ".workers.localhost:" + u.Port() + "/a"
	assert.Equal(t, "twin-first", echoOf(t, first, "").Script)
	assert.Equal(t, "twin-second", echoOf(t, "http://twin.second.workers.localhost:"+u.Port()+"/a", "").Script)
	for _, ambiguous := range []string{s.Workers().WorkerURL("twin"), s.URL() + "/__workers/twin"} {
		status, _, body := hostGet(t, ambiguous, "")
		assert.Equal(t, http.StatusConflict, status, ambiguous)
		assert.Contains(t, body, "more than one account", ambiguous)
	}
}

// A zone's hostnames are served by their routes (the most specific pattern
// wins; a route without a script runs none) and custom domains, a route
// before a custom domain on the same hostname, as Cloudflare documents. A
// zone hostname nothing serves is 404; other names are the emulator's own.
func TestZoneHostnamesServedByRoutesAndCustomDomains(t *testing.T) {
	s := start(t, emulator.Options{Logf: t.Logf})
	c := newClient(s)
	for _, name := range []string{"apex", "app", "api", "logger"} {
		mustUpload(t, c, name, meta(), echoJS(name))
	}
	zoneID, ok := s.Zones().ZoneID(acct, emuzones.DefaultZone)
	require.True(t, ok)
	rawAPI(t, s, emulator.DefaultToken, http.MethodPut, "accounts/"+acct+"/workers/domains",
		M{"hostname": "app.example.com", "zone_id": zoneID, "service": "app", "environment": "production"})
	for pattern, script := range map[string]string{
		"example.com/*":                 "apex",
		"*.example.com/api/*":           "api",
		"shop.example.com/api/public/*": "", // no Worker: negates the less specific pattern
		"app.example.com/log/*":         "logger",
	} {
		body := M{"pattern": pattern}
		if script != "" {
			body["script"] = script
		}
		rawAPI(t, s, emulator.DefaultToken, http.MethodPost, "zones/"+zoneID+"/workers/routes", body)
	}
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	at := func(host, path string) (int, string) {
		status, _, body := hostGet(t, s.URL()+path, host)
		return status, body
	}
	for _, c := range []struct{ host, path, script string }{
		{"example.com", "/", "apex"},
		{"example.com:" + u.Port(), "/a?b=c", "apex"},
		{"shop.example.com", "/api/v1", "api"},
		{"app.example.com", "/page", "app"},     // the custom domain
		{"app.example.com", "/", "app"},         // every path of it
		{"APP.example.com.", "/page", "app"},    // hostnames are case-blind
		{"app.example.com", "/api/x", "api"},    // a route before the custom domain
		{"app.example.com", "/log/1", "logger"}, // the most specific route
	} {
		status, body := at(c.host, c.path)
		require.Equal(t, http.StatusOK, status, "%s%s: %s", c.host, c.path, body)
		var e echoed
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		assert.Equal(t, c.script, e.Script, "%s%s", c.host, c.path)
		assert.Equal(t, c.path, e.Path, "%s%s: the script sees the path as sent", c.host, c.path)
	}
	for _, c := range []struct{ host, path string }{
		{"shop.example.com", "/api/public/x"}, // the route without a Worker
		{"shop.example.com", "/other"},        // nothing matches
		{"www.example.com", "/"},
	} {
		status, body := at(c.host, c.path)
		assert.Equal(t, http.StatusNotFound, status, "%s%s", c.host, c.path)
		assert.JSONEq(t, fmt.Sprintf(`{"error":"no worker route or custom domain serves %s%s"}`, strings.ToLower(c.host), c.path), body)
	}
	// A name under no zone is the emulator's own: its API answers.
	status, body := at("emulator.internal.test", "/client/v4/user/tokens/verify")
	assert.Equal(t, http.StatusBadRequest, status, body)
	assert.Contains(t, body, "Missing X-Auth-Key")
}

// A script whose workers.dev route is turned off, as the provider does for
// workersDev false, is no longer served on either workers.localhost host
// (404, as Cloudflare stops serving it on workers.dev), an upload leaves it
// off, and turning it on serves it again; its custom domain and routes
// reach it all the while, which is how a web with workersDev false is
// reached. A script whose route was never set is served.
func TestWorkersDevDisabledIsNotServed(t *testing.T) {
	s := start(t, emulator.Options{Logf: t.Logf})
	c := newClient(s)
	mustUpload(t, c, "web", meta(), echoJS("web"))
	mustUpload(t, c, "other", meta(), echoJS("other"))
	zoneID, ok := s.Zones().ZoneID(acct, emuzones.DefaultZone)
	require.True(t, ok)
	rawAPI(t, s, emulator.DefaultToken, http.MethodPut, "accounts/"+acct+"/workers/domains",
		M{"hostname": "web.example.com", "zone_id": zoneID, "service": "web", "environment": "production"})
	rawAPI(t, s, emulator.DefaultToken, http.MethodPost, "zones/"+zoneID+"/workers/routes",
		M{"pattern": "example.com/web/*", "script": "web"})
	u, err := url.Parse(s.URL())
	require.NoError(t, err)
	hosts := []string{"web.workers.localhost:" + u.Port(), "web." + emuworkers.DefaultSubdomain + ".workers.localhost:" + u.Port()}
	subdomain := "accounts/" + acct + "/workers/scripts/web/subdomain"
	served := func(why string) {
		t.Helper()
		for _, host := range hosts {
			assert.Equal(t, echoed{"web", host, "/x"}, echoOf(t, "http://"+host+"/x", ""), "%s: %s", why, host)
		}
	}
	notServed := func(why string) {
		t.Helper()
		for _, host := range hosts {
			status, _, body := hostGet(t, "http://"+host+"/x", "")
			assert.Equal(t, http.StatusNotFound, status, "%s: %s: %s", why, host, body)
			assert.JSONEq(t, fmt.Sprintf(`{"error":"worker script \"web\" is not served on %s: its workers.dev route is disabled; reach it by its routes or custom domains"}`,
				strings.Split(host, ":")[0]), body, "%s: %s", why, host)
		}
		// Its custom domain and its route still reach it, and so does the
		// emulator's own path alias.
		assert.Equal(t, "web", echoOf(t, s.URL()+"/page", "web.example.com").Script, why)
		assert.Equal(t, "web", echoOf(t, s.URL()+"/web/page", "example.com").Script, why)
		assert.Equal(t, "web", echoOf(t, s.URL()+"/__workers/web/page", "").Script, why)
	}

	served("never set")
	rawAPI(t, s, emulator.DefaultToken, http.MethodPost, subdomain, M{"enabled": true})
	served("enabled")
	rawAPI(t, s, emulator.DefaultToken, http.MethodPost, subdomain, M{"enabled": false})
	notServed("disabled")
	assert.Equal(t, "other", echoOf(t, "http://other.workers.localhost:"+u.Port()+"/", "").Script, "another script is untouched")
	mustUpload(t, c, "web", meta(), echoJS("web"))
	notServed("uploaded again")
	rawAPI(t, s, emulator.DefaultToken, http.MethodPost, subdomain, M{"enabled": true})
	served("enabled again")
	rawAPI(t, s, emulator.DefaultToken, http.MethodDelete, subdomain, nil)
	notServed("deleted")
}
