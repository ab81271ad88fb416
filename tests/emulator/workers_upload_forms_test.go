package emulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// formPart is one part of a hand-built upload, exactly as a client sends it.
type formPart struct{ name, filename, contentType, body string }

func formBody(t *testing.T, parts ...formPart) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		d := fmt.Sprintf("form-data; name=%q", p.name)
		if p.filename != "" {
			d += fmt.Sprintf("; filename=%q", p.filename)
		}
		h.Set("Content-Disposition", d)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		require.NoError(t, err)
		_, err = w.Write([]byte(p.body))
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	return mw.FormDataContentType(), buf.Bytes()
}

// putRaw sends body to the script upload route under contentType and
// returns the status and the decoded envelope.
func putRaw(t *testing.T, s *emulator.Server, path, method, contentType string, body []byte) (int, M) {
	t.Helper()
	req, err := http.NewRequest(method, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/scripts/"+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out M
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

func firstError(t *testing.T, env M) (float64, string) {
	t.Helper()
	errs, _ := env["errors"].([]any)
	require.NotEmpty(t, errs, "errors in %v", env)
	e := errs[0].(map[string]any)
	return e["code"].(float64), e["message"].(string)
}

func metaJSON(t *testing.T, m M) string {
	t.Helper()
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

const mainImportingUtil = `import { greet } from "./util.js";
import banner from "./banner.txt";
export default { fetch() { return new Response(greet() + " " + banner.trim()) } }`

// Each client's form of one upload with a main module importing a second
// module and a text module deploys and serves: the module names are the
// part names (wrangler, Alchemy) or the filenames under one shared part name
// (the Python SDK's "files", the TypeScript SDK's "files[]"), and the
// metadata is a plain field or a JSON file.
func TestWorkerUploadFormsOfEachClient(t *testing.T) {
	s := start(t, emulator.Options{})
	m := metaJSON(t, M{"main_module": "index.js", "compatibility_date": "2025-01-01"})
	util := "export function greet() { return 'hi' }"
	cases := []struct {
		name  string
		parts []formPart
	}{
		{"wrangler", []formPart{
			{"metadata", "", "application/json", m},
			{"index.js", "index.js", "application/javascript+module", mainImportingUtil},
			{"util.js", "util.js", "application/javascript+module", util},
			{"banner.txt", "banner.txt", "text/plain", "from text\n"},
		}},
		{"python-sdk", []formPart{
			{"files", "index.js", "application/javascript+module", mainImportingUtil},
			{"files", "util.js", "application/javascript+module", util},
			{"files", "banner.txt", "text/plain", "from text\n"},
			{"metadata", "", "application/json", m},
		}},
		{"typescript-sdk", []formPart{
			{"metadata", "metadata.json", "application/json", m},
			{"files[]", "index.js", "application/javascript+module", mainImportingUtil},
			{"files[]", "util.js", "application/javascript+module", util},
			{"files[]", "banner.txt", "text/plain", "from text\n"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, body := formBody(t, tc.parts...)
			status, env := putRaw(t, s, tc.name, http.MethodPut, ct, body)
			require.Equal(t, http.StatusOK, status, "%v", env)
			_, got := do(t, http.MethodGet, s.Workers().WorkerURL(tc.name)+"/", "", "")
			assert.Equal(t, "hi from text", got)
		})
	}
}

// A source map is kept with the version and served back by the content
// route, never run: Alchemy's default upload carries one beside the module.
func TestWorkerUploadKeepsSourceMapsAsSourceMaps(t *testing.T) {
	s := start(t, emulator.Options{})
	m := metaJSON(t, M{"main_module": "worker.js", "compatibility_date": "2025-01-01"})
	sourceMap := `{"version":3,"sources":["src/worker.ts"],"names":[],"mappings":"AAAA"}`
	ct, body := formBody(t,
		formPart{"worker.js", "worker.js", "application/javascript+module", "export default { fetch() { return new Response('mapped') } }\n//# sourceMappingURL=worker.js.map"},
		formPart{"worker.js.map", "worker.js.map", "application/source-map", sourceMap},
		formPart{"metadata", "", "application/json", m},
	)
	status, env := putRaw(t, s, "alchemy", http.MethodPut, ct, body)
	require.Equal(t, http.StatusOK, status, "%v", env)
	_, got := do(t, http.MethodGet, s.Workers().WorkerURL("alchemy")+"/", "", "")
	assert.Equal(t, "mapped", got)

	// The versions route reads the same forms.
	status, env = putRaw(t, s, "alchemy/versions", http.MethodPost, ct, body)
	require.Equal(t, http.StatusOK, status, "%v", env)

	req, err := http.NewRequest(http.MethodGet, s.CloudflareBaseURL()+"accounts/"+acct+"/workers/scripts/alchemy/content/v2", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	require.NoError(t, err)
	mr := multipart.NewReader(resp.Body, params["boundary"])
	types := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		types[p.FormName()] = p.Header.Get("Content-Type")
		if p.FormName() == "worker.js.map" {
			b, err := io.ReadAll(p)
			require.NoError(t, err)
			assert.Equal(t, sourceMap, string(b))
		}
	}
	assert.Equal(t, map[string]string{"worker.js": "application/javascript+module", "worker.js.map": "application/source-map"}, types)

	// A source map named as the main module is no script.
	bad := metaJSON(t, M{"main_module": "worker.js.map", "compatibility_date": "2025-01-01"})
	ct, body = formBody(t,
		formPart{"worker.js.map", "worker.js.map", "application/source-map", sourceMap},
		formPart{"metadata", "", "application/json", bad},
	)
	status, env = putRaw(t, s, "alchemy", http.MethodPut, ct, body)
	assert.Equal(t, http.StatusBadRequest, status)
	code, msg := firstError(t, env)
	assert.Equal(t, 10021.0, code)
	assert.Contains(t, msg, "source map")
}

// The forms Cloudflare refuses, refused the same way: the TypeScript SDK
// 7.x's default update (its multipart body under Content-Type
// application/javascript, run as the script worker.js), its metadata
// bracket-flattened into metadata[...] fields, and two modules of one name.
func TestWorkerUploadFormsCloudflareRefuses(t *testing.T) {
	s := start(t, emulator.Options{})
	m := metaJSON(t, M{"main_module": "index.js"})
	ct, body := formBody(t,
		formPart{"metadata[main_module]", "", "", "index.js"},
		formPart{"files[]", "index.js", "application/javascript+module", indexJS.body},
	)
	boundary := strings.TrimPrefix(ct, "multipart/form-data; boundary=")
	require.NotEqual(t, ct, boundary)

	t.Run("form under application/javascript", func(t *testing.T) {
		status, env := putRaw(t, s, "ts-default", http.MethodPut, "application/javascript", body)
		assert.Equal(t, http.StatusBadRequest, status)
		code, msg := firstError(t, env)
		assert.Equal(t, 10021.0, code)
		assert.True(t, strings.HasPrefix(msg, "Uncaught SyntaxError"), msg)
		assert.Contains(t, msg, "\n  at worker.js:")
	})
	t.Run("metadata fields", func(t *testing.T) {
		status, env := putRaw(t, s, "ts-fields", http.MethodPut, ct, body)
		assert.Equal(t, http.StatusBadRequest, status)
		code, msg := firstError(t, env)
		assert.Equal(t, 10021.0, code)
		assert.Equal(t, "could not read content for part metadata", msg)
	})
	t.Run("two modules of one name", func(t *testing.T) {
		ct, body := formBody(t,
			formPart{"metadata", "", "application/json", m},
			formPart{"files", "index.js", "application/javascript+module", indexJS.body},
			formPart{"files", "index.js", "application/javascript+module", indexJS.body},
		)
		status, env := putRaw(t, s, "dupes", http.MethodPut, ct, body)
		assert.Equal(t, http.StatusBadRequest, status)
		code, msg := firstError(t, env)
		assert.Equal(t, 10021.0, code)
		assert.Contains(t, msg, `"index.js"`)
	})
	assert.Empty(t, s.Inventory().Workers)

	// A script that is the whole body (service-worker syntax) is Cloudflare's
	// oldest upload form and deploys.
	status, env := putRaw(t, s, "raw", http.MethodPut, "application/javascript",
		[]byte(`addEventListener("fetch", (e) => e.respondWith(new Response("raw script")))`))
	require.Equal(t, http.StatusOK, status, "%v", env)
	_, got := do(t, http.MethodGet, s.Workers().WorkerURL("raw")+"/", "", "")
	assert.Equal(t, "raw script", got)
}
