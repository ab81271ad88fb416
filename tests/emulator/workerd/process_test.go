package workerd_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

func runtime(t *testing.T) *workerd.Runtime {
	t.Helper()
	bin, err := workerd.Find("")
	require.NoError(t, err)
	return &workerd.Runtime{Binary: bin, Dir: t.TempDir(), Logf: t.Logf}
}

func module(t *testing.T, name, code string) workerd.Module {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(code), 0o600))
	return workerd.Module{Name: name, Kind: workerd.ESModule, Path: p}
}

func call(t *testing.T, p *workerd.Process, worker, event, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.URL()+"/", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("x-emulator-worker", worker)
	req.Header.Set("x-emulator-event", event)
	req.Header.Set("x-emulator-url", url)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

// The gateway dispatches fetch, queue and scheduled events; bindings reach
// their backends with the backend's header, service bindings the bound
// worker, stubs answer with their status.
func TestGatewayDispatchesEveryEvent(t *testing.T) {
	var seen []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Emulator-Binding"))
		_ = json.NewEncoder(w).Encode([]map[string]any{{"success": true, "results": map[string]any{"columns": []string{"v"}, "rows": [][]any{{7}}}, "meta": map[string]any{"duration": 0}}})
	}))
	defer backend.Close()
	secret := "s3cret"
	cfg := workerd.Config{
		Workers: []workerd.Worker{
			{Service: "a", CompatibilityDate: "2025-01-01", Modules: []workerd.Module{module(t, "a.js", `
export default {
  async fetch(req, env) {
    const u = new URL(req.url);
    if (u.pathname === "/d1") return Response.json(await env.DB.prepare("select ?1 as v").bind(7).first());
    if (u.pathname === "/b") return env.B.fetch("https://b/x");
    if (u.pathname === "/gone") return env.GONE.fetch("https://gone/");
    return new Response(req.method + " " + req.url + " " + env.SECRET);
  },
  async queue(batch) { for (const m of batch.messages) { if (m.body.ok) m.ack(); else m.retry(); } },
  async scheduled(ev) { if (ev.cron !== "*/5 * * * *") throw new Error("cron " + ev.cron); },
};`)},
				Bindings: []workerd.Binding{{Name: "SECRET", Text: &secret}, {Name: "DB", D1: "d1"}, {Name: "B", Service: "b"}, {Name: "GONE", Service: "gone"}}},
			{Service: "b", Modules: []workerd.Module{module(t, "b.js", `export default { fetch(req) { return new Response("b saw " + new URL(req.url).pathname); } };`)}},
		},
		Backends: []workerd.Backend{{Service: "d1", Address: strings.TrimPrefix(backend.URL, "http://"), Header: "X-Emulator-Binding", Value: "d1:db-1"}},
		Stubs:    []workerd.Stub{{Service: "gone", Status: 503, Message: "no such script"}},
	}
	p, err := runtime(t).Start(context.Background(), "gen-1", cfg)
	require.NoError(t, err)
	defer p.Stop()

	status, body := call(t, p, "a", "", "http://example.test/hello?x=1", "")
	assert.Equal(t, 200, status)
	assert.Equal(t, "POST http://example.test/hello?x=1 s3cret", body)
	_, body = call(t, p, "a", "", "http://example.test/d1", "")
	assert.JSONEq(t, `{"v":7}`, body)
	assert.Equal(t, []string{"POST /query?resultsFormat=ROWS_AND_COLUMNS d1:db-1"}, seen)
	_, body = call(t, p, "a", "", "http://example.test/b", "")
	assert.Equal(t, "b saw /x", body)
	status, body = call(t, p, "a", "", "http://example.test/gone", "")
	assert.Equal(t, 503, status)
	assert.JSONEq(t, `{"error":"no such script"}`, body)

	_, body = call(t, p, "a", "queue", "", `{"queue":"q","messages":[{"id":"m1","timestamp":0,"attempts":1,"contentType":"json","body":"{\"ok\":true}"},{"id":"m2","timestamp":0,"attempts":1,"contentType":"json","body":"{\"ok\":false}"}]}`)
	var qr struct {
		Outcome       string              `json:"outcome"`
		ExplicitAcks  []string            `json:"explicitAcks"`
		RetryMessages []map[string]string `json:"retryMessages"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &qr), body)
	assert.Equal(t, "ok", qr.Outcome)
	assert.Equal(t, []string{"m1"}, qr.ExplicitAcks)
	assert.Equal(t, []map[string]string{{"msgId": "m2"}}, qr.RetryMessages)

	_, body = call(t, p, "a", "scheduled", "", `{"cron":"*/5 * * * *","scheduledTime":0}`)
	assert.JSONEq(t, `{"outcome":"ok","noRetry":false}`, body)
	_, body = call(t, p, "a", "scheduled", "", `{"cron":"0 * * * *","scheduledTime":0}`)
	assert.Contains(t, body, `"outcome":"exception"`)
}

// A script that throws at startup is refused with the runtime's message.
func TestStartReportsTheScriptsError(t *testing.T) {
	cfg := workerd.Config{Workers: []workerd.Worker{{Service: "bad", Modules: []workerd.Module{module(t, "worker.js", `throw new Error("boom at startup"); export default {};`)}}}}
	_, err := runtime(t).Start(context.Background(), "gen-1", cfg)
	var se *workerd.StartError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, "Uncaught Error: boom at startup\n  at worker.js:1:7", se.Message)
}
