package workerd_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

// tailPost is what the tail worker posts for one invocation.
type tailPost struct {
	Header string            `json:"-"`
	Props  map[string]string `json:"props"`
	Events []struct {
		Outcome string `json:"outcome"`
		Logs    []struct {
			Message []any  `json:"message"`
			Level   string `json:"level"`
		} `json:"logs"`
		Exceptions []struct {
			Name    string `json:"name"`
			Message string `json:"message"`
		} `json:"exceptions"`
		Event struct {
			Request struct {
				URL    string `json:"url"`
				Method string `json:"method"`
			} `json:"request"`
			Cron string `json:"cron"`
		} `json:"event"`
	} `json:"events"`
}

// A worker with TailProps has its console output, its uncaught exception
// and its event posted to the sink, with its props and the sink's header,
// for fetch and scheduled events alike; a worker without them is not tailed.
func TestTailWorkerPostsTraceEventsToTheSink(t *testing.T) {
	var mu sync.Mutex
	var posts []tailPost
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p tailPost
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("tail post %s: %v", body, err)
		}
		p.Header = r.Header.Get("X-Emulator-Binding")
		mu.Lock()
		posts = append(posts, p)
		mu.Unlock()
	}))
	defer sink.Close()
	code := `export default {
  fetch(req) {
    console.log("hello", { n: 1 });
    console.warn("careful");
    if (new URL(req.url).pathname === "/boom") throw new TypeError("kaboom");
    return new Response("ok");
  },
  scheduled(ev) { console.log("cron", ev.cron); },
};`
	cfg := workerd.Config{
		Workers: []workerd.Worker{
			{Service: "a", CompatibilityDate: "2025-01-01", Modules: []workerd.Module{module(t, "a.js", code)}, TailProps: map[string]string{"script": "acct/a"}},
			{Service: "quiet", CompatibilityDate: "2025-01-01", Modules: []workerd.Module{module(t, "q.js", `export default { fetch() { console.log("unseen"); return new Response("q"); } };`)}},
		},
		TailSink: &workerd.TailSink{Address: strings.TrimPrefix(sink.URL, "http://"), Header: "X-Emulator-Binding", Value: "tail/all/all"},
	}
	p, err := runtime(t).Start(context.Background(), "gen-1", cfg)
	require.NoError(t, err)
	defer p.Stop()

	status, body := call(t, p, "quiet", "", "http://example.test/", "")
	require.Equal(t, 200, status, body)
	status, body = call(t, p, "a", "", "http://example.test/ok", "")
	require.Equal(t, 200, status, body)
	status, _ = call(t, p, "a", "", "http://example.test/boom", "")
	require.Equal(t, 500, status)
	_, body = call(t, p, "a", "scheduled", "", `{"cron":"*/5 * * * *","scheduledTime":0}`)
	require.Contains(t, body, `"outcome":"ok"`)

	// Trace events arrive after each invocation ends.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) >= 3
	}, 10*time.Second, 20*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // a stray post from "quiet" would be here by now
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, posts, 3, "one post per invocation of the tailed worker, none for the other")
	byOutcome := map[string]tailPost{}
	for _, post := range posts {
		assert.Equal(t, map[string]string{"script": "acct/a"}, post.Props)
		assert.Equal(t, "tail/all/all", post.Header)
		require.Len(t, post.Events, 1)
		ev := post.Events[0]
		key := ev.Outcome + " " + ev.Event.Request.URL + ev.Event.Cron
		byOutcome[key] = post
	}
	ok := byOutcome["ok http://example.test/ok"].Events
	require.Len(t, ok, 1, "%v", byOutcome)
	require.Len(t, ok[0].Logs, 2)
	assert.Equal(t, []any{"hello", map[string]any{"n": 1.0}}, ok[0].Logs[0].Message)
	assert.Equal(t, "log", ok[0].Logs[0].Level)
	assert.Equal(t, "warn", ok[0].Logs[1].Level)
	assert.Equal(t, "POST", ok[0].Event.Request.Method)
	boom := byOutcome["exception http://example.test/boom"].Events
	require.Len(t, boom, 1, "%v", byOutcome)
	require.Len(t, boom[0].Exceptions, 1)
	assert.Equal(t, "TypeError", boom[0].Exceptions[0].Name)
	assert.Equal(t, "kaboom", boom[0].Exceptions[0].Message)
	cron := byOutcome["ok */5 * * * *"].Events
	require.Len(t, cron, 1, "%v", byOutcome)
	assert.Equal(t, []any{"cron", "*/5 * * * *"}, cron[0].Logs[0].Message)
}

// Without a sink the props attach nothing: the configuration has no tail
// worker and still starts.
func TestTailPropsWithoutASinkAttachNothing(t *testing.T) {
	cfg := workerd.Config{Workers: []workerd.Worker{{Service: "a", Modules: []workerd.Module{module(t, "a.js", `export default { fetch() { return new Response("a"); } };`)},
		TailProps: map[string]string{"script": "acct/a"}}}}
	text, err := workerd.Render(cfg, workerd.OwnModules{Gateway: "/x/gateway.js", Tail: "/x/tail.js"}, "/x")
	require.NoError(t, err)
	assert.NotContains(t, text, workerd.TailService)
	p, err := runtime(t).Start(context.Background(), "gen-1", cfg)
	require.NoError(t, err)
	defer p.Stop()
	status, body := call(t, p, "a", "", "http://example.test/", "")
	assert.Equal(t, 200, status)
	assert.Equal(t, "a", body)
}
