package anthropic

// The deterministic agent: what the stand-in answers next, read from the
// conversation so far and the tools the client offers. The plan for a
// prompt, each step taken only when its tool is offered:
//
//  1. read    the repository's README.md
//  2. write   NoteFile, quoting the prompt
//  3. bash    git add + git commit
//  4. create-pull-request  {title, body}
//  5. a summary (end_turn), with the pull request's link when step 4 gave one
//
// The step is the number of assistant turns since the prompt (the newest
// user message carrying text rather than tool results), so a client that
// replays the conversation, as every client does, walks the plan. A tool
// result marked is_error ends the plan early with a summary saying so.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// NoteFile is the file the agent writes in the repository.
const NoteFile = "AGENT_NOTE.md"

// Tool names as OpenCode 1.18.18 offers them, and upstream's pull-request
// tool (installed by its sandbox runtime from inspect-plugin.js).
const (
	toolRead    = "read"
	toolWrite   = "write"
	toolBash    = "bash"
	toolOpenPR  = "create-pull-request"
	kindTitle   = "title"
	kindSummary = "summary"
)

// outBlock is one content block of the answer.
type outBlock struct {
	kind  string // "text" or "tool_use"
	text  string
	id    string
	name  string
	input map[string]any
}

func (b outBlock) start() map[string]any {
	if b.kind == "tool_use" {
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": map[string]any{}}
	}
	return map[string]any{"type": "text", "text": ""}
}

// payload is what the block's deltas carry: its text, or its input as JSON.
func (b outBlock) payload() string {
	if b.kind == "tool_use" {
		j, _ := json.Marshal(b.input)
		return string(j)
	}
	return b.text
}

func (b outBlock) final() map[string]any {
	if b.kind == "tool_use" {
		return map[string]any{"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
	}
	return map[string]any{"type": "text", "text": b.text}
}

type turn struct {
	kind       string
	stopReason string
	blocks     []outBlock
}

func (t turn) outputTokens() int {
	n := 0
	for _, b := range t.blocks {
		n += len(b.payload())/4 + 1
	}
	return n
}

// nextTurn is the script's answer to req.
func nextTurn(req request) turn {
	prompt, since := promptOf(req.Messages)
	if len(req.Tools) == 0 {
		return textTurn(kindTitle, titleOf(titleSubject(req.Messages)))
	}
	offered := map[string]tool{}
	for _, t := range req.Tools {
		offered[t.Name] = t
	}
	// What has happened since the prompt: the assistant's tool calls and
	// the results the client sent back.
	var done []string
	var lastResult string
	for _, m := range req.Messages[since+1:] {
		for _, b := range m.blocks() {
			switch {
			case m.Role == "assistant" && b.Type == "tool_use":
				done = append(done, b.Name)
			case m.Role == "user" && b.Type == "tool_result":
				lastResult = resultText(b.Content)
				if b.IsError {
					return textTurn(kindSummary, fmt.Sprintf("I stopped: the %s step failed: %s", lastOr(done, "last"), firstLine(lastResult)))
				}
			}
		}
	}
	dir := workingDirectory(req.System)
	path := func(name string) string {
		if dir == "" {
			return name
		}
		return strings.TrimSuffix(dir, "/") + "/" + name
	}
	title := titleOf(prompt)
	note := fmt.Sprintf("# A note from the agent\n\nThe prompt was:\n\n%s\n", quote(prompt))
	plan := []struct {
		tool  string
		input map[string]any
	}{
		{toolRead, fill(offered[toolRead], map[string]string{"path": path("README.md")})},
		{toolWrite, fill(offered[toolWrite], map[string]string{"path": path(NoteFile), "content": note})},
		{toolBash, fill(offered[toolBash], map[string]string{"command": fmt.Sprintf("git add %s && git commit -m %s", NoteFile, shellQuote(title)),
			"description": "Commit the note"})},
		{toolOpenPR, fill(offered[toolOpenPR], map[string]string{"title": title,
			"body": fmt.Sprintf("Adds %s, which quotes the prompt.", NoteFile)})},
	}
	step := 0
	for _, p := range plan {
		if _, ok := offered[p.tool]; !ok {
			continue
		}
		if step < len(done) {
			step++
			continue
		}
		return turn{kind: p.tool, stopReason: "tool_use", blocks: []outBlock{
			{kind: "text", text: fmt.Sprintf("Next I will use %s.", p.tool)},
			{kind: "tool_use", id: "toolu_" + randomID(24), name: p.tool, input: p.input}}}
	}
	return textTurn(kindSummary, summaryOf(done, lastResult))
}

func textTurn(kind, text string) turn {
	return turn{kind: kind, stopReason: "end_turn", blocks: []outBlock{{kind: "text", text: text}}}
}

// promptOf is the newest user message carrying text and no tool results,
// and its index.
func promptOf(ms []message) (string, int) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role != "user" {
			continue
		}
		var texts []string
		results := false
		for _, b := range ms[i].blocks() {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_result":
				results = true
			}
		}
		if !results && len(texts) > 0 {
			return strings.TrimSpace(strings.Join(texts, "\n")), i
		}
	}
	return "", 0
}

// titleInstruction opens the text OpenCode's title request sends beside the
// person's prompt.
const titleInstruction = "Generate a title for this conversation"

// titleSubject is what a title request asks a title for: the newest user
// text that is not the client's own instruction (OpenCode sends both).
func titleSubject(ms []message) string {
	subject := ""
	for _, m := range ms {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			text := strings.TrimSpace(b.Text)
			if b.Type != "text" || text == "" {
				continue
			}
			if strings.HasPrefix(text, titleInstruction) {
				_, rest, _ := strings.Cut(text, "\n")
				text = strings.TrimSpace(rest)
			}
			if text != "" {
				subject = text
			}
		}
	}
	return subject
}

func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	var out []string
	for _, b := range bs {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "\n")
}

var workingDirRE = regexp.MustCompile(`(?m)Working directory:\s*(\S+)`)

// workingDirectory is the directory the client's system prompt names
// (OpenCode's environment block says "Working directory: <dir>"), or "".
func workingDirectory(system json.RawMessage) string {
	var s string
	if json.Unmarshal(system, &s) != nil {
		var bs []block
		_ = json.Unmarshal(system, &bs)
		for _, b := range bs {
			s += b.Text + "\n"
		}
	}
	if m := workingDirRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// fill makes a tool's input from its input schema: each property whose
// name contains a key of values (compared without case: "filePath" and
// "file_path" both take "path") gets that value; other required string
// properties get a short description. A schema it cannot read gets values
// as they are.
func fill(t tool, values map[string]string) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(t.InputSchema, &schema) != nil || len(schema.Properties) == 0 {
		out := map[string]any{}
		for k, v := range values {
			out[k] = v
		}
		return out
	}
	out := map[string]any{}
	names := make([]string, 0, len(schema.Properties))
	for name := range schema.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range names {
		for _, k := range keys {
			if strings.Contains(strings.ToLower(name), k) {
				out[name] = values[k]
				break
			}
		}
	}
	for _, name := range schema.Required {
		if _, ok := out[name]; !ok && schema.Properties[name].Type == "string" {
			out[name] = "Requested by the local cloud's scripted agent"
		}
	}
	return out
}

var prURLRE = regexp.MustCompile(`https?://[^\s"')]+/pull/\d+`)

func summaryOf(done []string, lastResult string) string {
	if len(done) == 0 {
		return "I had no tools to work with, so I changed nothing."
	}
	s := fmt.Sprintf("Done: I used %s. I wrote %s quoting your prompt", strings.Join(done, ", "), NoteFile)
	if contains(done, toolBash) {
		s += " and committed it"
	}
	s += "."
	if u := prURLRE.FindString(lastResult); u != "" {
		s += " Pull request: " + u
	}
	return s
}

// titleOf is a short title: the prompt's first six words.
func titleOf(prompt string) string {
	words := strings.Fields(prompt)
	if len(words) == 0 {
		return "Untitled session"
	}
	if len(words) > 6 {
		words = words[:6]
	}
	t := strings.Trim(strings.Join(words, " "), ".,;:!?\"'`")
	if len(t) > 60 {
		t = t[:60]
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

func quote(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func lastOr(xs []string, d string) string {
	if len(xs) == 0 {
		return d
	}
	return xs[len(xs)-1]
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
