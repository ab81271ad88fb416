package engine

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/serviceauth"
)

// TestLocalInstallationRuns deploys the full fixture installation and then
// drives it through its own HTTP endpoints, the scripts running in the
// emulator's workerd with the bindings the provider wired: the control
// plane's /health answers from the script; a signed request that creates a
// session writes a row the D1 /query API reads; the Slack bot's service
// binding reaches the control plane; a completion the control plane hands
// the Slack bot reaches the bot's queue consumer, and a failing one lands in
// the dead-letter queue after its retries; AppSecrets seeded through the
// script's own signature check, which refuses a wrong key.
func TestLocalInstallationRuns(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	up := previewUp(t, pt)
	cpURL := up.Outputs["controlPlaneUrl"].Value.(string)
	const cpName, botName = "open-inspect-control-plane-engine", "open-inspect-slack-bot-engine"
	botURL := emu.workerURL(botName)

	var cp workers.WorkerDetail
	emu.admin(t, http.MethodGet, "workers/"+emulatorAccount+"/"+cpName, &cp)
	slackKey := cp.Secrets["SERVICE_AUTH_SECRET_SLACK_BOT"]
	require.NotEmpty(t, slackKey, "the generated Slack bot service secret")

	// /health from the running script.
	status, body := httpDo(t, http.MethodGet, cpURL+"/health", nil, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"healthy","service":"open-inspect-control-plane"}`, body)
	var rt workers.RuntimeStats
	emu.admin(t, http.MethodGet, "runtime", &rt)
	assert.Positive(t, rt.Starts, "answered by workerd")
	assert.Positive(t, rt.LastWorkers)

	// AppSecrets seeded through the script's signature check: the value is
	// in its D1 database, encrypted under the installation's key.
	var stored map[string]string
	emu.admin(t, http.MethodGet, "app-secrets/"+emulatorAccount+"/"+cpName, &stored)
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": anthropicKey}, stored)
	signed := func(key, method, path string, body []byte) map[string]string {
		return map[string]string{
			"X-OpenInspect-Service":           "slack-bot",
			"X-OpenInspect-Service-Signature": serviceauth.Header(serviceauth.Request{Service: "slack-bot", Key: key, Method: method, Path: path, Body: body}),
			"Content-Type":                    "application/json",
		}
	}
	put := []byte(`{"secrets":{"INTRUDER":"x"}}`)
	status, body = httpDo(t, http.MethodPut, cpURL+"/secrets", put, signed("not-the-key", http.MethodPut, "/secrets", put))
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.JSONEq(t, `{"error":"Unauthorized"}`, body)
	emu.admin(t, http.MethodGet, "app-secrets/"+emulatorAccount+"/"+cpName, &stored)
	assert.NotContains(t, stored, "INTRUDER")

	// A session row written by the script, read through the D1 API.
	session := []byte(`{"sessionId":"local-1","repo":"acme/app"}`)
	status, body = httpDo(t, http.MethodPost, cpURL+"/sessions", session, signed(slackKey, http.MethodPost, "/sessions", session))
	require.Equal(t, http.StatusCreated, status, body)
	assert.JSONEq(t, `{"sessionId":"local-1"}`, body)
	inv := emu.inventory(t)
	require.Len(t, inv.D1, 1)
	assert.Equal(t, []map[string]any{{"id": "local-1", "title": "acme/app"}},
		emu.d1Rows(t, inv.D1[0].ID, "SELECT id, title FROM sessions WHERE id = ?", "local-1"))

	// The Slack bot's service binding reaches the control plane.
	status, body = httpDo(t, http.MethodGet, botURL+"/fixture/control-plane-health", nil, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"status":"healthy","service":"open-inspect-control-plane"}`, body)

	// A completion through the Slack bot's queue to its consumer.
	complete := func(id string, fail bool) {
		b := []byte(`{}`)
		if fail {
			b = []byte(`{"fail":true}`)
		}
		path := "/sessions/" + id + "/complete"
		status, body := httpDo(t, http.MethodPost, cpURL+path, b, signed(slackKey, http.MethodPost, path, b))
		require.Equal(t, http.StatusAccepted, status, body)
		assert.JSONEq(t, `{"queued":true}`, body)
	}
	complete("local-1", false)
	var kvID string
	for _, ns := range inv.KV {
		if ns.Title == "open-inspect-slack-kv-engine" {
			kvID = ns.ID
		}
	}
	require.NotEmpty(t, kvID)
	var record string
	require.Eventually(t, func() bool {
		var ok bool
		record, ok = kvGet(t, emu, kvID, "completion:local-1")
		return ok
	}, 30*time.Second, 100*time.Millisecond, "the consumer records the completion in SLACK_KV")
	assert.JSONEq(t, `{"sessionId":"local-1","attempts":1,"queue":"open-inspect-slack-completion-engine"}`, record)

	// A failing consumer: retried (slack-completion: max_retries 1, 15 s
	// apart), then in the dead-letter queue.
	complete("local-2", true)
	var dead []queues.Message
	require.Eventually(t, func() bool {
		emu.admin(t, http.MethodGet, "queues/"+emulatorAccount+"/open-inspect-slack-completion-dlq-engine/messages", &dead)
		return len(dead) == 1
	}, 60*time.Second, 250*time.Millisecond, "the message reaches the dead-letter queue")
	assert.JSONEq(t, `{"sessionId":"local-2","fail":true}`, dead[0].Body)
	var left []queues.Message
	emu.admin(t, http.MethodGet, "queues/"+emulatorAccount+"/open-inspect-slack-completion-engine/messages", &left)
	assert.Empty(t, left)
	_, recorded := kvGet(t, emu, kvID, "completion:local-2")
	assert.False(t, recorded, "a retried message is never recorded")
}

// httpDo sends a request and returns the status and body.
func httpDo(t *testing.T, method, u string, body []byte, headers map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(out)
}

// kvGet reads a KV value through the Cloudflare API.
func kvGet(t *testing.T, emu *emulatorProcess, nsID, key string) (string, bool) {
	t.Helper()
	status, body := emu.cloudflareRaw(t, http.MethodGet, "storage/kv/namespaces/"+nsID+"/values/"+url.PathEscape(key), nil)
	return string(body), status == http.StatusOK
}
