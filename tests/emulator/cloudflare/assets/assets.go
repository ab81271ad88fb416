package assets

// assets.go: the upload session and bucket upload routes, the store of
// files by content key, and the redemption of completion tokens. Workers
// static assets: the direct-upload flow
// (https://developers.cloudflare.com/workers/static-assets/direct-upload/).
//
//   - POST /accounts/{a}/workers/scripts/{name}/assets-upload-session
//     {manifest: {"/path": {hash, size}}}: every hash 32 hex digits, every
//     size at most 25 MiB (else 400, naming the path). Answers {jwt,
//     buckets}: the hashes the account does not hold, in buckets of at most
//     assetBucketSize; with none missing, jwt already is the completion token.
//   - POST /accounts/{a}/workers/assets/upload?base64=true, multipart, one
//     part per hash (base64 content, the file's content type), bearer = the
//     session JWT (not an API token). An unknown or expired session is 401
//     [10000]; a hash the session did not ask for is 400; a decoded file over
//     25 MiB is 413. The upload that completes the session answers {jwt: the
//     completion token}, others {}.
//   - a script upload redeems the completion token in metadata.assets.jwt:
//     the script then serves that manifest with metadata.assets.config. An
//     unknown or already redeemed token is 400; an assets binding without
//     assets is 400.
//
// Tokens are opaque JWT-shaped strings whose payload carries exp, so a
// client may read the expiry; they last Options.SessionLifetime
// (default an hour). Uploaded files are stored per account by hash and
// persisted; they outlive any one script, as content keys do on Cloudflare.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

const (
	maxAssetBytes          = 25 << 20
	assetBucketSize        = 10
	defaultAssetSessionTTL = time.Hour
)

var assetHashRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// stateVersion guards assets.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "assets.json"

// Options configures the assets service.
type Options struct {
	// SessionLifetime is how long upload and completion tokens last; zero
	// means an hour, as on Cloudflare.
	SessionLifetime time.Duration
}

// Service is the static assets API, its store of files and their serving.
// mu guards st and sessions; it is never held while the file is written,
// and the service calls no other package while holding it.
type Service struct {
	cf       *cloudflare.Accounts
	core     *core.Core
	lifetime time.Duration

	mu       sync.Mutex
	st       *store
	sessions map[string]*assetSession // by token, not persisted

	stateFile *core.StateFile
}

// store is what assets.json holds.
type store struct {
	Version int                   `json:"version"`
	Blobs   map[string]*assetBlob `json:"asset_blobs"` // by account + "/" + hash
}

// New loads assets.json from dataDir when present. Register mounts the routes.
func New(opts Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts) (*Service, error) {
	s := &Service{cf: accounts, core: c, lifetime: opts.SessionLifetime, sessions: map[string]*assetSession{},
		st:        &store{Version: stateVersion, Blobs: map[string]*assetBlob{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".assets-*.json", "assets state")}
	if err := core.LoadState(s.stateFile.Path(), "assets state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.Blobs)
	core.DropNil(s.st.Blobs)
	return s, nil
}

// Save writes assets.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

// invalid is the upload validation error (10021, as the script routes').
func invalid(format string, args ...any) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10021, fmt.Sprintf(format, args...))
}

// assetBlob is one stored file.
type assetBlob struct {
	Content     []byte `json:"content"`
	ContentType string `json:"content_type,omitempty"`
}

// Assets are what a script version serves (kept in the script's own state
// by package workers): URL path -> file, and the upload's assets config.
type Assets struct {
	Manifest map[string]ManifestEntry `json:"manifest"`
	Config   json.RawMessage          `json:"config,omitempty"`
}

// ManifestEntry is one file of a manifest: its content key and size.
type ManifestEntry struct {
	Hash string `json:"hash"`
	Size int64  `json:"size"`
}

// assetSession is an upload session or, once complete, a completion token
// waiting to be redeemed. Not persisted: tokens live for one process.
type assetSession struct {
	account  string
	manifest map[string]ManifestEntry
	missing  map[string]bool
	expires  time.Time
	complete bool
}

// Register mounts the upload session and bucket upload routes.
func (s *Service) Register() {
	const base = "/client/v4/accounts/{account_id}/workers"
	s.cf.API("POST "+base+"/scripts/{script_name}/assets-upload-session", cloudflare.AuthAccount, s.assetsStartSession)
	// The bucket upload is authorised by the session JWT, checked in the handler.
	s.core.API("POST "+base+"/assets/upload", func(http.ResponseWriter, *http.Request) bool { return true }, s.assetsUpload)
}

func (s *Service) assetSessionTTL() time.Duration {
	if s.lifetime > 0 {
		return s.lifetime
	}
	return defaultAssetSessionTTL
}

// newAssetTokenLocked issues a JWT-shaped token for sess.
func (s *Service) newAssetTokenLocked(sess *assetSession) string {
	claims, _ := json.Marshal(map[string]any{"exp": sess.expires.Unix(), "jti": core.NewHexID()})
	token := "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + "." + core.NewHexID()
	s.sessions[token] = sess
	return token
}

func (s *Service) assetsStartSession(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	var body struct {
		Manifest map[string]ManifestEntry `json:"manifest"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, core.MaxBody)).Decode(&body); err != nil || body.Manifest == nil {
		core.WriteError(w, invalid("the body must be {\"manifest\": {\"/path\": {\"hash\", \"size\"}}}"))
		return
	}
	paths := core.SortedKeys(body.Manifest)
	for _, p := range paths {
		e := body.Manifest[p]
		switch {
		case len(p) == 0 || p[0] != '/':
			core.WriteError(w, invalid("manifest path %q must start with /", p))
			return
		case !assetHashRE.MatchString(e.Hash):
			core.WriteError(w, invalid("manifest entry %s: hash %q is not 32 hex digits", p, e.Hash))
			return
		case e.Size < 0 || e.Size > maxAssetBytes:
			core.WriteError(w, invalid("manifest entry %s is %d bytes; asset files may be at most %d bytes (25 MiB)", p, e.Size, maxAssetBytes))
			return
		}
	}
	s.mu.Lock()
	sess := &assetSession{account: acct, manifest: body.Manifest, missing: map[string]bool{},
		expires: time.Now().Add(s.assetSessionTTL())}
	var missing []string
	for _, p := range paths {
		h := body.Manifest[p].Hash
		if _, held := s.st.Blobs[acct+"/"+h]; !held && !sess.missing[h] {
			sess.missing[h] = true
			missing = append(missing, h)
		}
	}
	sess.complete = len(missing) == 0
	token := s.newAssetTokenLocked(sess)
	s.mu.Unlock()
	buckets := [][]string{}
	for len(missing) > 0 {
		n := min(assetBucketSize, len(missing))
		buckets = append(buckets, missing[:n])
		missing = missing[n:]
	}
	core.WriteEnvelope(w, http.StatusCreated, map[string]any{"jwt": token, "buckets": buckets}, nil, nil)
}

func (s *Service) assetsUpload(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	token, _, _ := core.Bearer(r)
	// A session's fields and its missing set are changed by concurrent
	// bucket uploads (clients send several buckets at once): read them
	// under s.mu only.
	s.mu.Lock()
	sess := s.sessions[token]
	usable := sess != nil && !sess.complete && sess.account == acct && time.Now().Before(sess.expires)
	s.mu.Unlock()
	if !usable {
		core.WriteError(w, core.NewAPIError(http.StatusUnauthorized, 10000, "Authentication error: the asset upload session is unknown or expired"))
		return
	}
	if r.URL.Query().Get("base64") != "true" {
		core.WriteError(w, invalid("asset uploads must be sent with ?base64=true"))
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		core.WriteError(w, invalid("an asset upload must be multipart/form-data, one part per hash"))
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		core.WriteError(w, invalid("could not parse the multipart body: %v", err))
		return
	}
	got := map[string]assetBlob{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			core.WriteError(w, invalid("could not parse the multipart body: %v", err))
			return
		}
		hash := part.FormName()
		s.mu.Lock()
		requested := sess.missing[hash]
		s.mu.Unlock()
		if !requested {
			core.WriteError(w, invalid("hash %q was not requested by this upload session", hash))
			return
		}
		content, err := io.ReadAll(base64.NewDecoder(base64.StdEncoding, io.LimitReader(part, maxAssetBytes/3*4+8)))
		if err != nil {
			core.WriteError(w, invalid("part %s is not base64: %v", hash, err))
			return
		}
		if len(content) > maxAssetBytes {
			core.WriteError(w, core.NewAPIError(http.StatusRequestEntityTooLarge, 10000+200, fmt.Sprintf("asset %s is over 25 MiB", hash)))
			return
		}
		ct := part.Header.Get("Content-Type")
		if ct == "application/null" {
			ct = ""
		}
		got[hash] = assetBlob{Content: content, ContentType: ct}
	}
	s.mu.Lock()
	for hash, blob := range got {
		b := blob
		s.st.Blobs[acct+"/"+hash] = &b
		delete(sess.missing, hash)
	}
	result := map[string]any{}
	if len(sess.missing) == 0 {
		sess.complete = true
		delete(s.sessions, token)
		done := &assetSession{account: acct, manifest: sess.manifest, complete: true, expires: time.Now().Add(s.assetSessionTTL())}
		result["jwt"] = s.newAssetTokenLocked(done)
	}
	s.mu.Unlock()
	if err := s.Save(); err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteEnvelope(w, http.StatusCreated, result, nil, nil)
}

// Redeem turns a script upload's metadata.assets into the assets the new
// version serves: nil when the upload has none. The completion token is
// spent (tokens are not persisted, so nothing is written).
func (s *Service) Redeem(acct string, raw json.RawMessage) (*Assets, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var meta struct {
		JWT    string          `json:"jwt"`
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return nil, invalid("metadata.assets is malformed: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[meta.JWT]
	if sess == nil || !sess.complete || sess.account != acct || !time.Now().Before(sess.expires) {
		return nil, invalid("metadata.assets.jwt is not a valid completion token: upload the assets (assets-upload-session) again")
	}
	delete(s.sessions, meta.JWT)
	return &Assets{Manifest: sess.manifest, Config: meta.Config}, nil
}

// Entry is what one script's assets are, for the inventory.
type Entry struct {
	Files  int               `json:"files"`
	Hashes map[string]string `json:"hashes"` // URL path → content key
	Config json.RawMessage   `json:"config,omitempty"`
}

// EntryOf is a's inventory entry (nil for none).
func EntryOf(a *Assets) *Entry {
	if a == nil {
		return nil
	}
	e := &Entry{Files: len(a.Manifest), Hashes: map[string]string{}, Config: a.Config}
	for p, f := range a.Manifest {
		e.Hashes[p] = f.Hash
	}
	return e
}

// Blobs is how many files an account holds in its asset store.
func (s *Service) Blobs(account string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for key := range s.st.Blobs {
		if len(key) > len(account) && key[:len(account)+1] == account+"/" {
			n++
		}
	}
	return n
}

// Files is how many files the store holds, all accounts (the inventory's
// asset_files).
func (s *Service) Files() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.st.Blobs)
}

// Collect deletes the account's stored files whose content key used does
// not hold (package workers passes the keys every version of every script
// of the account serves): content keys outlive a script only while another
// one still uses them. It persists when a file went.
func (s *Service) Collect(acct string, used map[string]bool) error {
	s.mu.Lock()
	n := len(s.st.Blobs)
	for key := range s.st.Blobs {
		if hash, ok := strings.CutPrefix(key, acct+"/"); ok && !used[hash] {
			delete(s.st.Blobs, key)
		}
	}
	changed := len(s.st.Blobs) != n
	s.mu.Unlock()
	if !changed {
		return nil
	}
	return s.Save()
}

// Hashes adds the content keys a serves to used (for Collect).
func (a *Assets) Hashes(used map[string]bool) {
	if a != nil {
		for _, f := range a.Manifest {
			used[f.Hash] = true
		}
	}
}
