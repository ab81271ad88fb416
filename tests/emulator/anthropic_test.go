package emulator_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	pb "github.com/modal-labs/libmodal/modal-go/proto/modal_proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
)

// sseEvent is one server-sent event of the Messages stream.
type sseEvent struct {
	Name string
	Data map[string]any
}

// streamedMessage is a Messages stream put back together the way an SDK
// does: text from text_delta, tool inputs from input_json_delta.
type streamedMessage struct {
	Events     []string
	Text       []string         // per text block
	ToolUses   []map[string]any // {id, name, input}
	StopReason string
}

// callMessages sends a Messages request and reads the answer: the stream
// when body asks for one, checked event by event against Anthropic's
// order, or the whole message.
func callMessages(t *testing.T, s *emulator.Server, key string, body map[string]any) (int, streamedMessage, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, s.URL()+anthropic.Prefix+"/v1/messages", strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	res, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var out map[string]any
		require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
		return res.StatusCode, streamedMessage{}, out
	}
	var events []sseEvent
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d))
			require.Equal(t, name, d["type"], "the event's name is its data's type")
			events = append(events, sseEvent{name, d})
		}
	}
	require.NoError(t, sc.Err())

	// Anthropic's order: message_start, (ping), per block start, deltas,
	// stop; message_delta; message_stop.
	var m streamedMessage
	open := -1
	var text strings.Builder
	var partial strings.Builder
	var current map[string]any
	for i, e := range events {
		m.Events = append(m.Events, e.Name)
		switch e.Name {
		case "message_start":
			require.Zero(t, i, "message_start comes first")
			msg := e.Data["message"].(map[string]any)
			assert.Equal(t, "assistant", msg["role"])
			assert.True(t, strings.HasPrefix(msg["id"].(string), "msg_"))
		case "ping":
		case "content_block_start":
			require.Equal(t, -1, open, "a block starts only after the previous one stopped")
			open = int(e.Data["index"].(float64))
			current = e.Data["content_block"].(map[string]any)
			text.Reset()
			partial.Reset()
		case "content_block_delta":
			require.Equal(t, open, int(e.Data["index"].(float64)))
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				require.Equal(t, "text", current["type"])
				text.WriteString(d["text"].(string))
			case "input_json_delta":
				require.Equal(t, "tool_use", current["type"])
				partial.WriteString(d["partial_json"].(string))
			default:
				t.Fatalf("unexpected delta %v", d)
			}
		case "content_block_stop":
			require.Equal(t, open, int(e.Data["index"].(float64)))
			if current["type"] == "tool_use" {
				var input map[string]any
				require.NoError(t, json.Unmarshal([]byte(partial.String()), &input), "the input_json_delta pieces make JSON: %s", partial.String())
				m.ToolUses = append(m.ToolUses, map[string]any{"id": current["id"], "name": current["name"], "input": input})
			} else {
				m.Text = append(m.Text, text.String())
			}
			open = -1
		case "message_delta":
			require.Equal(t, -1, open)
			m.StopReason = e.Data["delta"].(map[string]any)["stop_reason"].(string)
		case "message_stop":
			require.Equal(t, len(events)-1, i, "message_stop comes last")
		}
	}
	return http.StatusOK, m, nil
}

// openCodeTools are tools as OpenCode offers them (names and the input
// schemas' property names), plus upstream's pull-request tool.
func openCodeTools() []map[string]any {
	schema := func(required []string, props ...string) map[string]any {
		p := map[string]any{}
		for _, n := range props {
			p[n] = map[string]string{"type": "string"}
		}
		return map[string]any{"type": "object", "properties": p, "required": required}
	}
	return []map[string]any{
		{"name": "bash", "input_schema": schema([]string{"command", "description"}, "command", "description", "workdir")},
		{"name": "read", "input_schema": schema([]string{"filePath"}, "filePath", "offset", "limit")},
		{"name": "write", "input_schema": schema([]string{"filePath", "content"}, "filePath", "content")},
		{"name": "glob", "input_schema": schema([]string{"pattern"}, "pattern", "path")},
		{"name": "create-pull-request", "input_schema": schema([]string{"title", "body"}, "title", "body", "baseBranch")},
	}
}

// TestModelStandInRunsTheAgentScript speaks the Messages API's streaming
// protocol to the model stand-in as an agent loop does: each answer's
// tool_use is answered with a tool_result and the conversation replayed,
// until the script reads the README, writes the note quoting the prompt,
// commits, opens the pull request and sums up with its link. Titles,
// whole (non-streamed) answers, a failed tool, the catalogue and the
// refusals (no key, a wrong key, missing fields) are checked too.
func TestModelStandInRunsTheAgentScript(t *testing.T) {
	const key = "sk-ant-local-test-key"
	s := start(t, emulator.Options{Anthropic: anthropic.Options{APIKeys: func() []string { return []string{key} }}})
	const prompt = "Add a note saying hello to the team"
	system := []map[string]any{{"type": "text", "text": "You are opencode.\n<env>\n  Working directory: /workspace/hello-world\n</env>"}}
	messages := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": prompt}}}}
	var used []string
	for step := 0; ; step++ {
		require.Less(t, step, 10, "the script ends")
		status, m, _ := callMessages(t, s, key, map[string]any{"model": "claude-sonnet-4-6", "max_tokens": 32000, "stream": true,
			"system": system, "tools": openCodeTools(), "messages": messages})
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, "message_start", m.Events[0])
		assert.Equal(t, "message_stop", m.Events[len(m.Events)-1])
		if m.StopReason == "end_turn" {
			require.Len(t, m.Text, 1)
			assert.Contains(t, m.Text[0], "Pull request: https://github.com/openinspect-local/hello-world/pull/7")
			break
		}
		require.Equal(t, "tool_use", m.StopReason)
		require.Len(t, m.ToolUses, 1)
		tu := m.ToolUses[0]
		used = append(used, tu["name"].(string))
		input := tu["input"].(map[string]any)
		result := "ok"
		switch tu["name"] {
		case "read":
			assert.Equal(t, "/workspace/hello-world/README.md", input["filePath"])
		case "write":
			assert.Equal(t, "/workspace/hello-world/"+anthropic.NoteFile, input["filePath"])
			assert.Contains(t, input["content"], "> "+prompt, "the note quotes the prompt")
		case "bash":
			assert.Contains(t, input["command"], "git commit -m")
			assert.NotEmpty(t, input["description"], "a required property is filled")
		case "create-pull-request":
			assert.Equal(t, "Add a note saying hello to", input["title"])
			result = `{"prNumber":7,"prUrl":"https://github.com/openinspect-local/hello-world/pull/7","state":"open"}`
		}
		assistant := []map[string]any{}
		for _, tx := range m.Text {
			assistant = append(assistant, map[string]any{"type": "text", "text": tx})
		}
		assistant = append(assistant, map[string]any{"type": "tool_use", "id": tu["id"], "name": tu["name"], "input": input})
		messages = append(messages, map[string]any{"role": "assistant", "content": assistant},
			map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": tu["id"], "content": result}}})
	}
	assert.Equal(t, []string{"read", "write", "bash", "create-pull-request"}, used)

	// A title request (no tools), answered whole.
	status, _, whole := callMessages(t, s, key, map[string]any{"model": "claude-haiku-4-5-20251001", "max_tokens": 48000,
		"messages": []map[string]any{{"role": "user", "content": prompt}}})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "end_turn", whole["stop_reason"])
	content := whole["content"].([]any)
	require.Len(t, content, 1)
	assert.Equal(t, "Add a note saying hello to", content[0].(map[string]any)["text"])
	// OpenCode's title request: its instruction, then the prompt; the title
	// is the prompt's, never the instruction's.
	for _, messages := range [][]map[string]any{
		{{"role": "user", "content": "Generate a title for this conversation:\n"}, {"role": "user", "content": prompt}},
		{{"role": "user", "content": []map[string]any{{"type": "text", "text": "Generate a title for this conversation:\n"}, {"type": "text", "text": prompt}}}},
		{{"role": "user", "content": prompt}, {"role": "user", "content": "Generate a title for this conversation:\n"}},
	} {
		status, _, whole = callMessages(t, s, key, map[string]any{"model": "claude-haiku-4-5-20251001", "max_tokens": 48000, "messages": messages})
		require.Equal(t, http.StatusOK, status)
		assert.Equal(t, "Add a note saying hello to", whole["content"].([]any)[0].(map[string]any)["text"], "%v", messages)
	}

	// A failed tool ends the plan with a summary saying so.
	failed := append(append([]map[string]any{}, messages[:1]...),
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "toolu_1", "name": "read", "input": map[string]any{}}}},
		map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": "File not found"}}})
	status, m, _ := callMessages(t, s, key, map[string]any{"model": "claude-sonnet-4-6", "max_tokens": 100, "stream": true, "tools": openCodeTools(), "messages": failed})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "end_turn", m.StopReason)
	assert.Contains(t, m.Text[0], "the read step failed: File not found")

	// Refusals, in Anthropic's shape.
	for _, c := range []struct {
		key, typ, msg string
		status        int
		body          map[string]any
	}{
		{"", "authentication_error", "x-api-key header is required", 401, map[string]any{"model": "m", "max_tokens": 1, "messages": messages[:1]}},
		{"sk-ant-wrong", "authentication_error", "invalid x-api-key", 401, map[string]any{"model": "m", "max_tokens": 1, "messages": messages[:1]}},
		{key, "invalid_request_error", "max_tokens: Field required", 400, map[string]any{"model": "m", "messages": messages[:1]}},
		{key, "invalid_request_error", "model: Field required", 400, map[string]any{"max_tokens": 1, "messages": messages[:1]}},
	} {
		status, _, body := callMessages(t, s, c.key, c.body)
		assert.Equal(t, c.status, status)
		assert.Equal(t, "error", body["type"])
		assert.Equal(t, map[string]any{"type": c.typ, "message": c.msg}, body["error"])
	}
	var refused int
	for _, e := range s.Anthropic().Exchanges() {
		if e.Error == "authentication_error" {
			refused++
		}
	}
	assert.Equal(t, 2, refused)

	// The catalogue OpenCode fetches.
	code, body := get(t, s.URL()+anthropic.CataloguePrefix+"/api.json")
	require.Equal(t, http.StatusOK, code)
	var cat map[string]struct {
		Env    []string                  `json:"env"`
		Models map[string]map[string]any `json:"models"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &cat))
	assert.Equal(t, []string{"ANTHROPIC_API_KEY"}, cat["anthropic"].Env)
	assert.Contains(t, cat["anthropic"].Models, "claude-sonnet-4-6")
	assert.Contains(t, cat["anthropic"].Models, "claude-haiku-4-5-20251001")
}

// TestModelStandInTakesTheSeededKey leaves the keys to the emulator: the
// key is the one the installation seeds in the Modal secret llm-api-keys,
// so before the secret exists every key is refused, and after only its
// value passes.
func TestModelStandInTakesTheSeededKey(t *testing.T) {
	s := start(t, emulator.Options{})
	body := map[string]any{"model": "claude-haiku-4-5", "max_tokens": 10, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
	status, _, _ := callMessages(t, s, "sk-ant-seeded", body)
	assert.Equal(t, http.StatusUnauthorized, status, "nothing seeded yet")

	raw := rawModal(t, s, emumodal.DefaultTokenID, emumodal.DefaultTokenSecret)
	_, err := raw.SecretGetOrCreate(context.Background(), pb.SecretGetOrCreateRequest_builder{
		DeploymentName: "llm-api-keys", ObjectCreationType: pb.ObjectCreationType_OBJECT_CREATION_TYPE_CREATE_OVERWRITE_IF_EXISTS,
		EnvDict: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-seeded"},
	}.Build())
	require.NoError(t, err)
	status, _, whole := callMessages(t, s, "sk-ant-seeded", body)
	assert.Equal(t, http.StatusOK, status, "%v", whole)
	status, _, _ = callMessages(t, s, "sk-ant-other", body)
	assert.Equal(t, http.StatusUnauthorized, status)
}

// TestModelStandInPassesThroughWithTheOwnKey turns on the opt-in
// pass-through against a loopback server standing in for the real API:
// a request with the installation's key is forwarded with the person's own
// key (never the seeded one) and its stream comes back as sent; a request
// with a wrong key is refused before anything leaves.
func TestModelStandInPassesThroughWithTheOwnKey(t *testing.T) {
	const seeded, own = "sk-ant-seeded-pt", "sk-ant-own-key"
	var calls int
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		assert.Equal(t, "/v1/messages", r.URL.Path)
		assert.Equal(t, own, r.Header.Get("x-api-key"), "the person's own key")
		assert.Equal(t, "2023-06-01", r.Header.Get("anthropic-version"))
		b, _ := io.ReadAll(r.Body)
		assert.Contains(t, string(b), `"model":"claude-sonnet-4-6"`)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_real","type":"message","role":"assistant","model":"claude-sonnet-4-6","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"from the real API"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`,
			`{"type":"message_stop"}`,
		} {
			var head struct{ Type string }
			_ = json.Unmarshal([]byte(ev), &head)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", head.Type, ev)
		}
	}))
	defer api.Close()
	pt := anthropic.PassThrough{URL: api.URL + "/v1", APIKey: own}
	require.NoError(t, pt.Validate())
	require.ErrorContains(t, anthropic.PassThrough{URL: api.URL + "/v1"}.Validate(), "APIKey")
	require.ErrorContains(t, anthropic.PassThrough{URL: "api.anthropic.com", APIKey: own}.Validate(), "URL")
	s := start(t, emulator.Options{Anthropic: anthropic.Options{APIKeys: func() []string { return []string{seeded} }, PassThrough: pt}})

	body := map[string]any{"model": "claude-sonnet-4-6", "max_tokens": 100, "stream": true, "messages": []map[string]any{{"role": "user", "content": "hi"}}}
	status, m, _ := callMessages(t, s, seeded, body)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []string{"from the real API"}, m.Text)
	assert.Equal(t, "end_turn", m.StopReason)
	assert.Equal(t, 1, calls)

	status, _, refused := callMessages(t, s, "sk-ant-wrong", body)
	assert.Equal(t, http.StatusUnauthorized, status, "%v", refused)
	assert.Equal(t, 1, calls, "a wrong key never reaches the real API")
	ex := s.Anthropic().Exchanges()
	require.Len(t, ex, 2)
	assert.Equal(t, "passthrough", ex[0].Kind)
	assert.Equal(t, http.StatusOK, ex[0].Status)
}
