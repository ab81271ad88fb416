package workers

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactQueryHidesCredentialsOnly(t *testing.T) {
	for in, want := range map[string]string{
		"http://a/b":                          "http://a/b",
		"http://a/cb?code=abc&state=xyz&x=1":  "http://a/cb?code=REDACTED&state=REDACTED&x=1",
		"http://a/ws?access_token=t&room=r":   "http://a/ws?access_token=REDACTED&room=r",
		"http://a/s?api%5Fkey=k&flag":         "http://a/s?api%5Fkey=REDACTED&flag",
		"http://a/s?X-Amz-Signature=s&page=2": "http://a/s?X-Amz-Signature=REDACTED&page=2",
	} {
		assert.Equal(t, want, redactQuery(in), in)
	}
}

// event decodes a trace item as the tail worker posts it.
func event(t *testing.T, raw string) (traceEvent, traceEventInfo) {
	t.Helper()
	var ev traceEvent
	require.NoError(t, json.Unmarshal([]byte(raw), &ev))
	var info traceEventInfo
	require.NoError(t, json.Unmarshal(ev.Event, &info))
	return ev, info
}

// Each kind of event gets its first line as wrangler's pretty format
// words it, then its logs and exceptions, indented.
func TestLogEntryReadsAsWranglerPrintsIt(t *testing.T) {
	for name, c := range map[string]struct{ raw, want string }{
		"cron": {`{"outcome":"ok","logs":[{"message":["ran",{"n":2}],"level":"info","timestamp":1}],"exceptions":[],"eventTimestamp":1767323045678,"event":{"cron":"*/5 * * * *","scheduledTime":1767323045000}}`,
			"2026-01-02T03:04:05.678Z \"*/5 * * * *\" - Ok\n  (info) ran {\"n\":2}\n"},
		"queue": {`{"outcome":"exception","logs":[],"exceptions":[{"name":"Error","message":"two\nlines","timestamp":1,"stack":"at a\nat b"}],"eventTimestamp":1767323045678,"event":{"queue":"jobs","batchSize":1}}`,
			"2026-01-02T03:04:05.678Z Queue jobs (1 message) - Exception Thrown\n  Error: two\n    lines\n    at a\n    at b\n"},
		"durable object": {`{"outcome":"ok","entrypoint":"Counter","logs":[],"exceptions":[],"eventTimestamp":1767323045678,"event":{"request":{"url":"http://x/do","method":"post","headers":{}},"response":{"status":201}}}`,
			"2026-01-02T03:04:05.678Z Counter POST http://x/do - Ok (201)\n"},
		"alarm": {`{"outcome":"exceededCpu","logs":[],"exceptions":[],"eventTimestamp":1767323045678,"event":{"scheduledTime":"2026-01-02T03:04:05.000Z"}}`,
			"2026-01-02T03:04:05.678Z Alarm - Exceeded CPU Limit\n"},
	} {
		ev, info := event(t, c.raw)
		assert.Equal(t, c.want, logEntry(ev, info), name)
	}
}

// Filters as wrangler sends them: all must match; an unknown kind is
// refused naming it.
func TestTailFilters(t *testing.T) {
	ev, info := event(t, `{"outcome":"exception","logs":[{"message":["user 42 failed"],"level":"error","timestamp":1}],"exceptions":[{"name":"TypeError","message":"kaboom","timestamp":1}],
		"eventTimestamp":1,"event":{"request":{"url":"http://x/","method":"POST","headers":{"x-trace":"abc","cf-connecting-ip":"10.0.0.1"}}}}`)
	ev.ScriptVersion = &traceVersion{ID: "v-1"}
	for filters, want := range map[string]bool{
		`[]`: true,
		`[{"outcome":["exception","exceededCpu"]}]`:                         true,
		`[{"outcome":["ok"]}]`:                                              false,
		`[{"method":["get","post"]}]`:                                       true,
		`[{"method":["GET"]}]`:                                              false,
		`[{"header":{"key":"X-Trace"}}]`:                                    true,
		`[{"header":{"key":"x-trace","query":"abc"}}]`:                      true,
		`[{"header":{"key":"x-trace","query":"abd"}}]`:                      false,
		`[{"query":"user 42"}]`:                                             true,
		`[{"query":"kaboom"}]`:                                              true,
		`[{"query":"nothing like it"}]`:                                     false,
		`[{"client_ip":["self"]}]`:                                          true,
		`[{"client_ip":["10.0.0.1"]}]`:                                      true,
		`[{"client_ip":["10.0.0.2"]}]`:                                      false,
		`[{"scriptVersion":"v-1"}]`:                                         true,
		`[{"scriptVersion":"v-2"}]`:                                         false,
		`[{"outcome":["exception"]},{"method":["GET"]}]`:                    false,
		`[{"outcome":["exception"]},{"header":{"key":"cf-connecting-ip"}}]`: true,
	} {
		var raw []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(filters), &raw))
		parsed, err := parseTailFilters(raw)
		require.NoError(t, err, filters)
		assert.Equal(t, want, passesTailFilters(parsed, ev, info), filters)
	}
	for filters, field := range map[string]string{
		`[{"colour":"red"}]`:         "filters[0].colour",
		`[{}, {"outcome":["ok"]}]`:   "filters[0]",
		`[{"sampling_rate":1.5}]`:    "filters[0].sampling_rate",
		`[{"outcome":"ok"}]`:         "filters[0].outcome",
		`[{"header":{"query":"x"}}]`: "filters[0].header",
	} {
		var raw []json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(filters), &raw))
		_, err := parseTailFilters(raw)
		require.Error(t, err, filters)
		assert.Contains(t, err.Error(), field, filters)
	}
}
