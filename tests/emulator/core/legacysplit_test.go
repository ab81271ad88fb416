package core

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestSplitLegacyState(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"version": 1, "a": {"x": 1}, "b": [2], "c": "three", "unknown": true}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte(legacy), 0o600))
	keys := map[string]string{"a": "one.json", "b": "one.json", "c": "two.json", "d": "three.json"}
	require.NoError(t, SplitLegacyState(dir, "state.json", keys, 1))

	assert.Equal(t, map[string]any{"version": 1.0, "a": map[string]any{"x": 1.0}, "b": []any{2.0}}, readJSON(t, filepath.Join(dir, "one.json")))
	assert.Equal(t, map[string]any{"version": 1.0, "c": "three"}, readJSON(t, filepath.Join(dir, "two.json")))
	assert.Equal(t, map[string]any{"version": 1.0}, readJSON(t, filepath.Join(dir, "three.json")), "a family without keys gets an empty file")
	_, err := os.Stat(filepath.Join(dir, "state.json"))
	assert.True(t, os.IsNotExist(err), "state.json is renamed away")
	assert.JSONEq(t, legacy, string(must(os.ReadFile(filepath.Join(dir, "state.json.split")))))

	// A state.json next to a family's file is not split again: the files win.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"version": 1, "c": "new"}`), 0o600))
	require.NoError(t, SplitLegacyState(dir, "state.json", keys, 1))
	assert.Equal(t, "three", readJSON(t, filepath.Join(dir, "two.json"))["c"])
	_, err = os.Stat(filepath.Join(dir, "state.json"))
	assert.NoError(t, err, "left alone")
}

func TestSplitLegacyStateRefusesOtherVersions(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"version": 2}`), 0o600))
	err := SplitLegacyState(dir, "state.json", map[string]string{"a": "one.json"}, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version 2")
	_, err = os.Stat(filepath.Join(dir, "one.json"))
	assert.True(t, os.IsNotExist(err), "nothing written")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
