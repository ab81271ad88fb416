package cfapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAssetService is the asset upload service reduced to its contract:
// sessions answer the hashes it lacks in buckets, uploads need the session
// token, and the upload that completes the set answers the completion token.
type fakeAssetService struct {
	mu       sync.Mutex
	stored   map[string][]byte // by hash
	types    map[string]string // content type by hash
	sessions map[string][]string
	// expireNext makes the next session's token be refused (HTTP 401) on upload.
	expireNext int
	expired    map[string]bool
	nextID     int
	uploads    int
	bucketSize int
}

func newFakeAssetService() *fakeAssetService {
	return &fakeAssetService{stored: map[string][]byte{}, types: map[string]string{}, sessions: map[string][]string{},
		expired: map[string]bool{}, bucketSize: 2}
}

func (f *fakeAssetService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeResult := func(status int, result any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"success": status < 300, "errors": []any{}, "messages": []any{}, "result": result})
	}
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/assets-upload-session"):
		var body struct {
			Manifest AssetManifest `json:"manifest"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeResult(400, nil)
			return
		}
		var missing []string
		seen := map[string]bool{}
		for _, file := range body.Manifest {
			if _, ok := f.stored[file.Hash]; !ok && !seen[file.Hash] {
				missing = append(missing, file.Hash)
				seen[file.Hash] = true
			}
		}
		f.nextID++
		token := fmt.Sprintf("session-%d", f.nextID)
		if f.expireNext > 0 {
			f.expireNext--
			f.expired[token] = true
		}
		var buckets [][]string
		for len(missing) > 0 {
			n := min(f.bucketSize, len(missing))
			buckets = append(buckets, missing[:n])
			missing = missing[n:]
		}
		if len(buckets) == 0 {
			writeResult(201, map[string]any{"jwt": "completion-" + token, "buckets": []any{}})
			return
		}
		var all []string
		for _, b := range buckets {
			all = append(all, b...)
		}
		f.sessions[token] = all
		writeResult(201, map[string]any{"jwt": token, "buckets": buckets})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/workers/assets/upload"):
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		wanted, ok := f.sessions[token]
		if !ok || f.expired[token] || r.URL.Query().Get("base64") != "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}`)
			return
		}
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				writeResult(400, nil)
				return
			}
			raw, _ := io.ReadAll(part)
			content, err := base64.StdEncoding.DecodeString(string(raw))
			if err != nil {
				writeResult(400, nil)
				return
			}
			f.stored[part.FormName()] = content
			f.types[part.FormName()] = part.Header.Get("Content-Type")
		}
		f.uploads++
		for _, h := range wanted {
			if _, ok := f.stored[h]; !ok {
				writeResult(200, map[string]any{})
				return
			}
		}
		writeResult(201, map[string]any{"jwt": "completion-" + token})
	default:
		http.NotFound(w, r)
	}
}

// memSource serves assets from memory and counts the files opened.
type memSource struct {
	files  map[string]string
	mu     sync.Mutex
	opened []string
}

func (m *memSource) Open(path string) (io.ReadCloser, error) {
	m.mu.Lock()
	m.opened = append(m.opened, path)
	m.mu.Unlock()
	text, ok := m.files[path]
	if !ok {
		return nil, fmt.Errorf("no file %s", path)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

func (m *memSource) ContentType(path string) string {
	if strings.HasSuffix(path, ".html") {
		return "text/html; charset=utf-8"
	}
	return ""
}

func manifestOf(files map[string]string) AssetManifest {
	out := AssetManifest{}
	for path, text := range files {
		out[path] = AssetFile{Hash: fmt.Sprintf("%032x", []byte(text))[:32], Size: int64(len(text))}
	}
	return out
}

func assetClient(t *testing.T, svc http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	c, err := New(Options{APIToken: "token", AccountID: "acct", BaseURL: srv.URL + "/client/v4/"})
	require.NoError(t, err)
	return c
}

func TestSyncAssetsUploadsOnlyWhatIsMissing(t *testing.T) {
	svc := newFakeAssetService()
	c := assetClient(t, svc)
	files := map[string]string{"/index.html": "<h1>hi</h1>", "/a.css": "body{}", "/b.js": "x()", "/img/c.txt": "ccc", "/d": "ddd"}
	src := &memSource{files: files}

	jwt, stats, err := c.SyncAssets(t.Context(), "site", manifestOf(files), src)
	require.NoError(t, err)
	assert.Equal(t, "completion-session-1", jwt)
	assert.Equal(t, AssetUploadStats{Sessions: 1, Buckets: 3, Files: 5}, stats)
	assert.Equal(t, []byte("<h1>hi</h1>"), svc.stored[manifestOf(files)["/index.html"].Hash], "content arrives decoded from base64")
	assert.Equal(t, "text/html; charset=utf-8", svc.types[manifestOf(files)["/index.html"].Hash])
	assert.Equal(t, "application/null", svc.types[manifestOf(files)["/d"].Hash], "no content type is sent as application/null")

	// Nothing changed: one session call, no upload, the session token is the completion token.
	src.opened = nil
	jwt, stats, err = c.SyncAssets(t.Context(), "site", manifestOf(files), src)
	require.NoError(t, err)
	assert.Equal(t, "completion-session-2", jwt)
	assert.Equal(t, AssetUploadStats{Sessions: 1}, stats)
	assert.Empty(t, src.opened, "no file is read when nothing is missing")

	// One file changed: exactly that file is read and uploaded.
	files["/a.css"] = "body{color:red}"
	jwt, stats, err = c.SyncAssets(t.Context(), "site", manifestOf(files), src)
	require.NoError(t, err)
	assert.Equal(t, "completion-session-3", jwt)
	assert.Equal(t, AssetUploadStats{Sessions: 1, Buckets: 1, Files: 1}, stats)
	assert.Equal(t, []string{"/a.css"}, src.opened)
}

func TestSyncAssetsResumesAfterAnExpiredSession(t *testing.T) {
	svc := newFakeAssetService()
	svc.expireNext = 1
	c := assetClient(t, svc)
	files := map[string]string{"/1": "one", "/2": "two", "/3": "three"}

	jwt, stats, err := c.SyncAssets(t.Context(), "site", manifestOf(files), &memSource{files: files})
	require.NoError(t, err)
	assert.Equal(t, "completion-session-2", jwt, "the second session completes the upload")
	assert.Equal(t, 2, stats.Sessions)
	assert.Equal(t, 3, stats.Files, "every file went up once, in the second session")
	assert.Len(t, svc.stored, 3)
}

func TestSyncAssetsGivesUpAfterRepeatedExpiry(t *testing.T) {
	svc := newFakeAssetService()
	svc.expireNext = 100
	c := assetClient(t, svc)
	files := map[string]string{"/1": "one"}
	_, stats, err := c.SyncAssets(t.Context(), "site", manifestOf(files), &memSource{files: files})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no completion token after 4 upload sessions")
	assert.Equal(t, maxAssetSessions, stats.Sessions)
}

func TestSyncAssetsRefusesAHashNotInTheManifest(t *testing.T) {
	svc := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, `{"success":true,"errors":[],"messages":[],"result":{"jwt":"s","buckets":[["ffffffffffffffffffffffffffffffff"]]}}`)
	})
	c := assetClient(t, svc)
	files := map[string]string{"/1": "one"}
	_, _, err := c.SyncAssets(t.Context(), "site", manifestOf(files), &memSource{files: files})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ffffffffffffffffffffffffffffffff, which is not in the manifest")
}

func TestSyncAssetsReportsAnUnreadableFile(t *testing.T) {
	svc := newFakeAssetService()
	c := assetClient(t, svc)
	manifest := manifestOf(map[string]string{"/gone": "x"})
	_, _, err := c.SyncAssets(t.Context(), "site", manifest, &memSource{files: map[string]string{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading asset /gone")
}

func TestJWTExpired(t *testing.T) {
	enc := func(claims string) string {
		return "h." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".s"
	}
	now := time.Unix(1_000_000, 0)
	assert.True(t, jwtExpired(enc(`{"exp":999999}`), now))
	assert.True(t, jwtExpired(enc(`{"exp":1000000}`), now))
	assert.False(t, jwtExpired(enc(`{"exp":1000001}`), now))
	assert.False(t, jwtExpired("not-a-jwt", now))
	assert.False(t, jwtExpired(enc(`{}`), now))
}

func TestAssetsOnlyMetadataHasNoMainModule(t *testing.T) {
	u := ScriptUpload{Name: "site", MainModule: "index.js", CompatibilityDate: "2025-01-01",
		Bindings: nil, Assets: &ScriptAssets{JWT: "done", Config: &AssetsConfig{NotFoundHandling: "404-page", RunWorkerFirst: []string{"/api/*"}}}}
	contentType, body, err := u.MultipartBody()
	require.NoError(t, err)
	_, params, _ := mime.ParseMediaType(contentType)
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	part, err := mr.NextPart()
	require.NoError(t, err)
	var meta map[string]any
	require.NoError(t, json.NewDecoder(part).Decode(&meta))
	assert.NotContains(t, meta, "main_module")
	assert.Equal(t, map[string]any{"jwt": "done", "config": map[string]any{"not_found_handling": "404-page", "run_worker_first": []any{"/api/*"}}}, meta["assets"])
	_, err = mr.NextPart()
	assert.ErrorIs(t, err, io.EOF, "no module parts")
}
