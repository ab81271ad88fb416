package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuworkers "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
)

// loggingJS logs on every request and throws on /boom.
const loggingJS = `export default {
  async fetch(request) {
    const url = new URL(request.url);
    console.log("handling", url.pathname, { n: 1 });
    if (url.pathname === "/boom") {
      console.error("about to fail");
      throw new TypeError("kaboom");
    }
    return new Response("fine");
  },
};`

// tailMessage is a trace event as the tail WebSocket sends it.
type tailMessage struct {
	Outcome       string `json:"outcome"`
	ScriptName    string `json:"scriptName"`
	ScriptVersion struct {
		ID string `json:"id"`
	} `json:"scriptVersion"`
	Logs []struct {
		Message   []any  `json:"message"`
		Level     string `json:"level"`
		Timestamp int64  `json:"timestamp"`
	} `json:"logs"`
	Exceptions []struct {
		Name      string `json:"name"`
		Message   string `json:"message"`
		Timestamp int64  `json:"timestamp"`
	} `json:"exceptions"`
	EventTimestamp int64 `json:"eventTimestamp"`
	Event          struct {
		Request struct {
			URL     string            `json:"url"`
			Method  string            `json:"method"`
			Headers map[string]string `json:"headers"`
		} `json:"request"`
	} `json:"event"`
}

// dialTail connects to a tail's WebSocket as wrangler does (subprotocol
// trace-v1, then {"debug": false}) and returns its messages as they come.
func dialTail(t *testing.T, url string) (*websocket.Conn, <-chan string) {
	t.Helper()
	cfg, err := websocket.NewConfig(url, "http://localhost/")
	require.NoError(t, err)
	cfg.Protocol = []string{"trace-v1"}
	ws, err := websocket.DialConfig(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	require.NoError(t, websocket.Message.Send(ws, `{"debug":false}`))
	msgs := make(chan string, 16)
	go func() {
		defer close(msgs)
		for {
			var m string
			if err := websocket.Message.Receive(ws, &m); err != nil {
				return
			}
			msgs <- m
		}
	}()
	return ws, msgs
}

func nextTailMessage(t *testing.T, msgs <-chan string) tailMessage {
	t.Helper()
	select {
	case m, ok := <-msgs:
		require.True(t, ok, "the tail closed")
		var out tailMessage
		require.NoError(t, json.Unmarshal([]byte(m), &out), m)
		return out
	case <-time.After(15 * time.Second):
		t.Fatal("no trace event on the tail within 15s")
	}
	return tailMessage{}
}

// A script's console output and its uncaught exception go to its log file
// and to the tails open on it, in Cloudflare's shape; the failed request's
// Cf-Ray finds its exception in the log; the tail API answers as
// Cloudflare's does (create, get, delete) and refuses what it must.
func TestWorkerLogsAndTails(t *testing.T) {
	var mu sync.Mutex
	var exceptionLines []string
	s := start(t, emulator.Options{Workers: emuworkers.Options{ExceptionLogf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		exceptionLines = append(exceptionLines, strings.TrimSpace(fmt.Sprintf(format, args...)))
	}}})
	c := newClient(s)
	ctx := context.Background()
	mustUpload(t, c, "logger", M{"main_module": "index.js", "compatibility_date": "2025-01-01"},
		mod{"index.js", "application/javascript+module", loggingJS})
	version := versionOf(t, s, emulator.DefaultToken, acct, "logger")

	// The API: a tail for a script that does not exist is 10007; a filter
	// the API does not know is 10021 naming it.
	_, err := c.Workers.Scripts.Tail.New(ctx, "nobody", workers.ScriptTailNewParams{AccountID: cloudflare.F(acct), Body: M{"filters": []M{}}})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	_, err = c.Workers.Scripts.Tail.New(ctx, "logger", workers.ScriptTailNewParams{AccountID: cloudflare.F(acct), Body: M{"filters": []M{{"colour": "red"}}}})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10021)
	assert.Contains(t, apiErr.Errors[0].Message, "filters[0].colour")

	all, err := c.Workers.Scripts.Tail.New(ctx, "logger", workers.ScriptTailNewParams{AccountID: cloudflare.F(acct), Body: M{"filters": []M{}}})
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}$`, all.ID)
	assert.Equal(t, "ws://"+strings.TrimPrefix(s.URL(), "http://")+"/__emulator/tails/"+all.ID, all.URL)
	expires, err := time.Parse(time.RFC3339, all.ExpiresAt)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), expires, time.Minute, "a tail lives about an hour")
	errorsOnly, err := c.Workers.Scripts.Tail.New(ctx, "logger", workers.ScriptTailNewParams{AccountID: cloudflare.F(acct),
		Body: M{"filters": []M{{"outcome": []string{"exception", "exceededCpu"}}}}})
	require.NoError(t, err)
	got, err := c.Workers.Scripts.Tail.Get(ctx, "logger", workers.ScriptTailGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, errorsOnly.ID, got.ID, "GET answers the newest tail")
	assert.Equal(t, errorsOnly.URL, got.URL)

	// A WebSocket without the trace-v1 subprotocol is refused.
	plain, err := websocket.NewConfig(all.URL, "http://localhost/")
	require.NoError(t, err)
	_, err = websocket.DialConfig(plain)
	require.Error(t, err, "a tail socket without trace-v1")

	_, allMsgs := dialTail(t, all.URL)
	_, errMsgs := dialTail(t, errorsOnly.URL)

	// A request that works: its log lines arrive on the unfiltered tail.
	res, body := do(t, http.MethodGet, s.Workers().WorkerURL("logger")+"/fine?x=1", "", "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	okRay := res.Header.Get("Cf-Ray")
	assert.Regexp(t, `^[0-9a-f]{16}-EMU$`, okRay)
	okEv := nextTailMessage(t, allMsgs)
	assert.Equal(t, "ok", okEv.Outcome)
	assert.Equal(t, "logger", okEv.ScriptName)
	assert.Equal(t, version, okEv.ScriptVersion.ID)
	require.Len(t, okEv.Logs, 1)
	assert.Equal(t, []any{"handling", "/fine", map[string]any{"n": 1.0}}, okEv.Logs[0].Message)
	assert.Equal(t, "log", okEv.Logs[0].Level)
	assert.Positive(t, okEv.Logs[0].Timestamp)
	assert.Empty(t, okEv.Exceptions)
	assert.Equal(t, "GET", okEv.Event.Request.Method)
	assert.Equal(t, s.Workers().WorkerURL("logger")+"/fine?x=1", okEv.Event.Request.URL)
	assert.Equal(t, okRay, okEv.Event.Request.Headers["cf-ray"])
	assert.Positive(t, okEv.EventTimestamp)

	// A request that throws, with a token the script never logs and an
	// OAuth code in its query: the exception on both tails, the token
	// redacted in the event (the URL is the script's, as on Cloudflare).
	boomURL := s.Workers().WorkerURL("logger") + "/boom?code=one-time-code&step=2"
	res, _ = do(t, http.MethodGet, boomURL, "Bearer do-not-log-me", "")
	require.Equal(t, http.StatusInternalServerError, res.StatusCode)
	ray := res.Header.Get("Cf-Ray")
	require.NotEmpty(t, ray, "a failed request carries its ray")
	for name, msgs := range map[string]<-chan string{"unfiltered": allMsgs, "exceptions only": errMsgs} {
		ev := nextTailMessage(t, msgs)
		assert.Equal(t, "exception", ev.Outcome, name)
		require.Len(t, ev.Exceptions, 1, name)
		assert.Equal(t, "TypeError", ev.Exceptions[0].Name)
		assert.Equal(t, "kaboom", ev.Exceptions[0].Message)
		assert.Positive(t, ev.Exceptions[0].Timestamp)
		require.Len(t, ev.Logs, 2, name)
		assert.Equal(t, []any{"about to fail"}, ev.Logs[1].Message)
		assert.Equal(t, "error", ev.Logs[1].Level)
		assert.Equal(t, ray, ev.Event.Request.Headers["cf-ray"], name)
		assert.Equal(t, boomURL, ev.Event.Request.URL, name)
		assert.Equal(t, "REDACTED", ev.Event.Request.Headers["authorization"], name)
	}

	// The log file: both requests as people read them, found by the ray;
	// neither the token nor the code in it. The emulator's log names the
	// failed request.
	logs := s.Workers().WorkerLogs()
	path := logs.Files[acct+"/logger"]
	require.Equal(t, s.Workers().LogFile(acct, "logger"), path)
	assert.True(t, strings.HasPrefix(path, logs.Dir), "%s is under %s", path, logs.Dir)
	assert.True(t, strings.HasPrefix(path, s.DataDir()), "the logs are under the data directory")
	var text string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		text = string(b)
		return strings.Contains(text, "kaboom")
	}, 10*time.Second, 20*time.Millisecond)
	assert.Contains(t, text, "GET "+s.Workers().WorkerURL("logger")+"/fine?x=1 - Ok (200) (cf-ray "+okRay+")\n")
	assert.Contains(t, text, `  (log) handling /fine {"n":1}`+"\n")
	redactedBoom := s.Workers().WorkerURL("logger") + "/boom?code=REDACTED&step=2"
	assert.Contains(t, text, "GET "+redactedBoom+" - Exception Thrown (cf-ray "+ray+")\n")
	assert.Contains(t, text, "  (error) about to fail\n  TypeError: kaboom\n    at ")
	assert.NotContains(t, text, "do-not-log-me")
	assert.NotContains(t, text, "one-time-code")
	mu.Lock()
	assert.Equal(t, []string{"worker logger: GET " + redactedBoom + " - Exception Thrown (cf-ray " + ray + ") threw TypeError: kaboom (log: " + path + ")"}, exceptionLines)
	mu.Unlock()
	_, listed := do(t, http.MethodGet, s.URL()+"/__emulator/worker-logs", "", "")
	assert.Contains(t, listed, `"`+acct+`/logger":"`+path+`"`)

	// DELETE ends the tail and closes its socket; GET then has none, and
	// a second DELETE is 404.
	_, err = c.Workers.Scripts.Tail.Delete(ctx, "logger", all.ID, workers.ScriptTailDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	select {
	case _, open := <-allMsgs:
		assert.False(t, open, "no event after the delete")
	case <-time.After(10 * time.Second):
		t.Fatal("the deleted tail's socket stayed open")
	}
	_, err = c.Workers.Scripts.Tail.Delete(ctx, "logger", errorsOnly.ID, workers.ScriptTailDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	res, body = do(t, http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/scripts/logger/tails", "Bearer "+emulator.DefaultToken, "")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	assert.JSONEq(t, `{"success":true,"errors":[],"messages":[],"result":null}`, body)
	_, err = c.Workers.Scripts.Tail.Delete(ctx, "logger", all.ID, workers.ScriptTailDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10007)
	res, _ = do(t, http.MethodGet, "http"+strings.TrimPrefix(all.URL, "ws"), "", "")
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "a deleted tail's URL")
}
