package anthropic

import (
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// catalogueModel is one model in models.dev's api.json format (the fields
// OpenCode reads: capabilities, limits, costs, modalities).
type catalogueModel struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Family      string         `json:"family"`
	Attachment  bool           `json:"attachment"`
	Reasoning   bool           `json:"reasoning"`
	ToolCall    bool           `json:"tool_call"`
	Temperature bool           `json:"temperature"`
	Knowledge   string         `json:"knowledge"`
	ReleaseDate string         `json:"release_date"`
	LastUpdated string         `json:"last_updated"`
	Modalities  map[string]any `json:"modalities"`
	OpenWeights bool           `json:"open_weights"`
	Cost        map[string]any `json:"cost"`
	Limit       map[string]int `json:"limit"`
}

// Catalogue is the local model catalogue: the one provider and the three
// models a session uses (the session's default model and the title model
// OpenCode picks, the newest of the claude-haiku family, under both of its
// names). The prices and limits are plausible, not Anthropic's word; the
// stand-in charges nothing.
func Catalogue() map[string]any {
	model := func(id, name, family, release string, cost map[string]any, output int) catalogueModel {
		return catalogueModel{ID: id, Name: name, Family: family, Attachment: true, Reasoning: true, ToolCall: true, Temperature: true,
			Knowledge: "2025-03", ReleaseDate: release, LastUpdated: release,
			Modalities: map[string]any{"input": []string{"text", "image", "pdf"}, "output": []string{"text"}},
			Cost:       cost, Limit: map[string]int{"context": 200000, "output": output}}
	}
	sonnet := map[string]any{"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}
	haiku := map[string]any{"input": 1, "output": 5, "cache_read": 0.1, "cache_write": 1.25}
	return map[string]any{"anthropic": map[string]any{
		"id": "anthropic", "name": "Anthropic", "env": []string{"ANTHROPIC_API_KEY"}, "npm": "@ai-sdk/anthropic",
		"doc": "https://docs.anthropic.com/en/docs/about-claude/models",
		"models": map[string]catalogueModel{
			"claude-sonnet-4-6":         model("claude-sonnet-4-6", "Claude Sonnet 4.6", "claude-sonnet", "2026-02-17", sonnet, 64000),
			"claude-haiku-4-5":          model("claude-haiku-4-5", "Claude Haiku 4.5 (latest)", "claude-haiku", "2025-10-15", haiku, 64000),
			"claude-haiku-4-5-20251001": model("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "claude-haiku", "2025-10-15", haiku, 64000),
		},
	}}
}

// catalogue is GET /api.json.
func (s *Service) catalogue(w http.ResponseWriter, _ *http.Request) {
	core.WriteJSON(w, http.StatusOK, Catalogue())
}
