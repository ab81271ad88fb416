package cfapi

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScriptUploadMultipartBody(t *testing.T) {
	secret, empty := "v", ""
	up := ScriptUpload{
		Name: "w", MainModule: "index.js",
		Modules: []Module{
			{Name: "index.js", Content: []byte("export default {}")},
			{Name: "lib.cjs", Content: []byte("module.exports = 1")},
		},
		CompatibilityDate:  "2024-09-23",
		CompatibilityFlags: []string{"nodejs_compat"},
		Bindings: []Binding{
			{Type: "d1", Name: "DB", ID: "db-id"},
			{Type: "secret_text", Name: "KEY", Text: &secret},
			{Type: "plain_text", Name: "EMPTY", Text: &empty},
		},
		Migrations: &Migration{NewTag: "v1", NewSqliteClasses: []string{"SessionDO"}},
	}
	contentType, body, err := up.MultipartBody()
	require.NoError(t, err)
	mediaType, params, err := mime.ParseMediaType(contentType)
	require.NoError(t, err)
	assert.Equal(t, "multipart/form-data", mediaType)

	reader := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	parts := map[string]string{}
	types := map[string]string{}
	var order []string
	for {
		part, err := reader.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		content, err := io.ReadAll(part)
		require.NoError(t, err)
		parts[part.FormName()] = string(content)
		types[part.FormName()] = part.Header.Get("Content-Type")
		order = append(order, part.FormName())
	}
	assert.Equal(t, []string{"metadata", "index.js", "lib.cjs"}, order)
	assert.Equal(t, "application/javascript+module", types["index.js"])
	assert.Equal(t, "application/javascript", types["lib.cjs"])

	var meta map[string]any
	require.NoError(t, json.Unmarshal([]byte(parts["metadata"]), &meta))
	assert.Equal(t, "index.js", meta["main_module"])
	assert.Equal(t, map[string]any{"new_tag": "v1", "new_sqlite_classes": []any{"SessionDO"}}, meta["migrations"])
	assert.Equal(t, []any{
		map[string]any{"type": "d1", "name": "DB", "id": "db-id"},
		map[string]any{"type": "secret_text", "name": "KEY", "text": "v"},
		map[string]any{"type": "plain_text", "name": "EMPTY", "text": ""},
	}, meta["bindings"], "an empty var is sent with its empty text")
}

func TestAPIErrorNamesOperationAndCodes(t *testing.T) {
	err := &APIError{Op: "create queue \"q\"", StatusCode: 400, Codes: []int{11009}, Messages: []string{"exists"}}
	assert.Equal(t, `create queue "q": HTTP 400: [11009] exists`, err.Error())
	assert.True(t, HasCode(err, 11009))
	assert.False(t, HasCode(err, 1))
	assert.False(t, IsNotFound(err))
	assert.True(t, IsNotFound(&APIError{StatusCode: 404}))
}

// A binding of a kind the provider does not model reads back with its
// properties in Extra, equal to the one sent; modelled keys stay typed.
func TestBindingRoundTripKeepsUnmodelledProperties(t *testing.T) {
	sent := Binding{Type: "pipelines", Name: "PIPE", BindingKinds: BindingKinds{Extra: map[string]any{"pipeline": "p", "n": 2.0}}}
	raw, err := json.Marshal(sent)
	require.NoError(t, err)
	var got Binding
	require.NoError(t, json.Unmarshal(raw, &got))
	assert.Equal(t, sent, got)

	var typed Binding
	require.NoError(t, json.Unmarshal([]byte(`{"type":"analytics_engine","name":"E","dataset":"d"}`), &typed))
	assert.Equal(t, "d", typed.Dataset)
	assert.Nil(t, typed.Extra, "modelled keys are not Extra")
}

// Every upload states its tags, [] included: an upload without tags would
// leave the script's previous tags in place.
func TestScriptUploadAlwaysSendsTags(t *testing.T) {
	_, body, err := ScriptUpload{Name: "w", MainModule: "index.js", Modules: []Module{{Name: "index.js", Content: []byte("export default {}")}}}.MultipartBody()
	require.NoError(t, err)
	assert.Contains(t, string(body), `"tags":[]`)
}

// A wildcard base gives each script its own origin; a plain base the older
// <base>/<script>; none, workers.dev.
func TestWorkersDevURL(t *testing.T) {
	for _, c := range []struct{ base, sub, want string }{
		{"http://*.workers.localhost:8787", "", "http://oi-web.workers.localhost:8787"},
		{"http://*.acct.workers.localhost:8787", "", "http://oi-web.acct.workers.localhost:8787"},
		{"https://*.example.test", "", "https://oi-web.example.test"},
		{"http://127.0.0.1:8787/__workers", "", "http://127.0.0.1:8787/__workers/oi-web"},
		{"", "acct", "https://oi-web.acct.workers.dev"},
	} {
		assert.Equal(t, c.want, WorkersDevURL(c.base, c.sub, "oi-web"), "%q", c.base)
	}
}

func TestCheckWorkersDevBase(t *testing.T) {
	for _, ok := range []string{"", "http://127.0.0.1:8787/__workers", "http://*.workers.localhost:8787", "https://*.acct.workers.localhost", "http://*.workers.localhost:8787/"} {
		assert.NoError(t, CheckWorkersDevBase(ok), ok)
	}
	for bad, msg := range map[string]string{
		"http://web-*.workers.localhost:8787":     "the first label of the host",
		"http://*.*.workers.localhost":            "the first label of the host",
		"http://127.0.0.1:8787/*":                 "the first label of the host",
		"*.workers.localhost:8787":                "the first label of the host",
		"ftp://*.workers.localhost":               "http or https",
		"http://*.workers.localhost:8787/prefix":  "without a path",
		"http://*.workers.localhost:8787/?a=b":    "without a path",
		"http://*.workers.localhost:bad-port/xyz": "not a URL",
	} {
		err := CheckWorkersDevBase(bad)
		if assert.Error(t, err, bad) {
			assert.Contains(t, err.Error(), msg, bad)
		}
	}
}
