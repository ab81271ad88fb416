package cfapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A module named by its path is streamed from the file (and one given as
// Text from its string): the request has a
// Content-Length (not chunked), carries exactly MultipartBody's bytes, and
// is sent whole again when Cloudflare answers 429 (the retry re-reads the
// file).
func TestUploadScriptStreamsModuleFileAndRetries(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "index.js")
	code := "export default { fetch() { return new Response('" + strings.Repeat("x", 300_000) + "') } }"
	require.NoError(t, os.WriteFile(bundle, []byte(code), 0o644))
	up := ScriptUpload{Name: "w", MainModule: "index.js", CompatibilityDate: "2025-01-01",
		Modules: []Module{{Name: "index.js", Path: bundle}, {Name: "lib.txt", Text: "hello"}}}
	wantType, want, err := ScriptUpload{Name: "w", MainModule: "index.js", CompatibilityDate: "2025-01-01",
		Modules: []Module{{Name: "index.js", Content: []byte(code)}, {Name: "lib.txt", Content: []byte("hello")}}}.MultipartBody()
	require.NoError(t, err)

	var mu sync.Mutex
	var bodies, types []string
	var lengths []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		mu.Lock()
		bodies, lengths = append(bodies, string(b)), append(lengths, r.ContentLength)
		types = append(types, r.Header.Get("Content-Type"))
		first := len(bodies) == 1
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if first {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"success":false,"errors":[{"code":971,"message":"rate limited"}],"messages":[],"result":null}`)
			return
		}
		_, _ = io.WriteString(w, `{"success":true,"errors":[],"messages":[],"result":{"id":"w","etag":"e1"}}`)
	}))
	defer srv.Close()
	c, err := New(Options{APIToken: "t", AccountID: "acc", BaseURL: srv.URL + "/client/v4/"})
	require.NoError(t, err)

	script, err := c.UploadScript(context.Background(), up)
	require.NoError(t, err)
	assert.Equal(t, "e1", script.Etag)
	require.Len(t, bodies, 2, "the 429 is retried")
	for i, body := range bodies {
		assert.Equal(t, int64(len(want)), lengths[i], "attempt %d carries a Content-Length", i)
		// Each body has its own random boundary; otherwise the bytes match.
		_, gotBoundary, _ := strings.Cut(types[i], "boundary=")
		_, wantBoundary, _ := strings.Cut(wantType, "boundary=")
		require.NotEmpty(t, gotBoundary)
		if body != strings.ReplaceAll(string(want), wantBoundary, gotBoundary) {
			t.Errorf("attempt %d: the body (%d bytes) is not the in-memory build's", i, len(body))
		}
	}
}

// A bundle that changes length between sizing the body and sending it is
// refused, never sent truncated or with bytes past the declared length.
func TestUploadBodyRefusesAModuleFileThatChanged(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "index.js")
	require.NoError(t, os.WriteFile(bundle, []byte("export default {}"), 0o644))
	body, err := ScriptUpload{Name: "w", MainModule: "index.js", Modules: []Module{{Name: "index.js", Path: bundle}}}.body()
	require.NoError(t, err)
	for _, content := range []string{"export default {} // grown", "export"} {
		require.NoError(t, os.WriteFile(bundle, []byte(content), 0o644))
		r, err := body.open()
		require.NoError(t, err)
		_, err = io.ReadAll(r)
		require.NoError(t, r.Close())
		require.Error(t, err, "file now %q", content)
		assert.Contains(t, err.Error(), "module index.js changed while it was being uploaded")
	}
}

// A module file that is gone when the upload starts is an error naming it.
func TestUploadBodyNamesAMissingModuleFile(t *testing.T) {
	_, err := ScriptUpload{Name: "w", MainModule: "index.js",
		Modules: []Module{{Name: "index.js", Path: filepath.Join(t.TempDir(), "gone.js")}}}.body()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "module index.js")
}
