package cfapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
)

// Workers static assets, uploaded the way Cloudflare's direct-upload API
// wants them (https://developers.cloudflare.com/workers/static-assets/direct-upload/):
//
//  1. POST .../workers/scripts/{name}/assets-upload-session {manifest}
//     answers a session JWT and the buckets of hashes the service does not
//     have yet (files it already holds for the account are not asked for);
//  2. each bucket is POSTed to .../workers/assets/upload?base64=true as
//     multipart, one part per hash holding the file base64-encoded, with
//     the session JWT as bearer token; the response that completes the set
//     carries the completion JWT;
//  3. the script upload's metadata carries {assets: {jwt, config}}.
//
// With nothing to upload the session JWT already is the completion token.

// AssetFile is one manifest entry: the file's content key and size.
type AssetFile struct {
	Hash string `json:"hash"`
	Size int64  `json:"size"`
}

// AssetManifest maps each asset's URL path ("/" + posix relative path) to
// its file.
type AssetManifest map[string]AssetFile

// AssetSource opens the content of a manifest path for upload, and names
// its content type ("" for none). Content is read as each part is sent, so
// an upload holds one file's worth of buffer at a time, not the directory.
type AssetSource interface {
	Open(path string) (io.ReadCloser, error)
	ContentType(path string) string
}

// AssetsConfig is metadata.assets.config of a script upload.
type AssetsConfig struct {
	HTMLHandling     string `json:"html_handling,omitempty"`
	NotFoundHandling string `json:"not_found_handling,omitempty"`
	// RunWorkerFirst is a bool or a list of route rules ("/api/*", "!/api/docs/*").
	RunWorkerFirst any    `json:"run_worker_first,omitempty"`
	Headers        string `json:"_headers,omitempty"`
	Redirects      string `json:"_redirects,omitempty"`
}

// ScriptAssets is metadata.assets of a script upload: the completion token
// of an asset upload and how the assets are served.
type ScriptAssets struct {
	JWT    string        `json:"jwt"`
	Config *AssetsConfig `json:"config,omitempty"`
}

// AssetUploadStats counts what an asset sync did.
type AssetUploadStats struct {
	Sessions int // upload sessions opened (more than one after an expired JWT)
	Buckets  int // bucket uploads sent
	Files    int // files uploaded
}

const (
	// assetUploadConcurrency is how many buckets are in flight at once.
	assetUploadConcurrency = 3
	// maxAssetSessions bounds the restarts after expired session tokens.
	maxAssetSessions = 4
)

// ErrAssetSessionExpired reports a session token the service no longer
// accepts; the sync opens a new session and resumes.
var ErrAssetSessionExpired = errors.New("the asset upload session expired")

// AssetSession is the answer to an upload-session request.
type AssetSession struct {
	JWT     string
	Buckets [][]string
}

// StartAssetSession registers a manifest for script.
func (c *Client) StartAssetSession(ctx context.Context, script string, manifest AssetManifest) (AssetSession, error) {
	body, err := json.Marshal(struct {
		Manifest AssetManifest `json:"manifest"`
	}{manifest})
	if err != nil {
		return AssetSession{}, fmt.Errorf("encoding the assets manifest: %w", err)
	}
	res, err := c.api.Workers.Scripts.Assets.Upload.New(ctx, script, workers.ScriptAssetUploadNewParams{AccountID: cf.F(c.accountID)},
		option.WithRequestBody("application/json", body))
	if err != nil {
		return AssetSession{}, wrap(fmt.Sprintf("start the asset upload of worker %q", script), err)
	}
	return AssetSession{JWT: res.JWT, Buckets: res.Buckets}, nil
}

// UploadAssetBucket sends one bucket of files (by hash) with the session
// token, streaming each file base64-encoded into the request. It returns
// the completion token when this bucket completed the set, else "".
func (c *Client) UploadAssetBucket(ctx context.Context, sessionJWT string, bucket []string, files map[string]string, src AssetSource) (string, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() { pw.CloseWithError(writeAssetParts(mw, bucket, files, src)) }()
	res, err := c.api.Workers.Assets.Upload.New(ctx, workers.AssetUploadNewParams{
		AccountID: cf.F(c.accountID), Base64: cf.F(workers.AssetUploadNewParamsBase64True),
	}, option.WithRequestBody(mw.FormDataContentType(), pr), option.WithHeader("Authorization", "Bearer "+sessionJWT))
	_ = pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the request ended early
	if err != nil {
		err = wrap("upload assets", err)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
			return "", fmt.Errorf("%w: %w", ErrAssetSessionExpired, err)
		}
		return "", err
	}
	return res.JWT, nil
}

// writeAssetParts writes one part per hash: the file base64-encoded, named
// by its hash, with the file's content type.
func writeAssetParts(mw *multipart.Writer, bucket []string, files map[string]string, src AssetSource) error {
	for _, hash := range bucket {
		path := files[hash]
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, hash, hash))
		contentType := src.ContentType(path)
		if contentType == "" {
			// The service reads application/null as "no content type".
			contentType = "application/null"
		}
		h.Set("Content-Type", contentType)
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if err := copyBase64(w, src, path); err != nil {
			return err
		}
	}
	return mw.Close()
}

func copyBase64(w io.Writer, src AssetSource, path string) error {
	f, err := src.Open(path)
	if err != nil {
		return fmt.Errorf("reading asset %s: %w", path, err)
	}
	defer f.Close()
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := io.Copy(enc, f); err != nil {
		return fmt.Errorf("reading asset %s: %w", path, err)
	}
	return enc.Close()
}

// SyncAssets uploads what the service lacks of manifest and returns the
// completion token for the script upload. A session whose token expires is
// replaced by a new one; the service then asks only for what is still
// missing, so the upload resumes rather than restarts.
func (c *Client) SyncAssets(ctx context.Context, script string, manifest AssetManifest, src AssetSource) (string, AssetUploadStats, error) {
	var stats AssetUploadStats
	byHash := make(map[string]string, len(manifest))
	for path, f := range manifest {
		byHash[f.Hash] = path
	}
	for stats.Sessions < maxAssetSessions {
		session, err := c.StartAssetSession(ctx, script, manifest)
		stats.Sessions++
		if err != nil {
			return "", stats, err
		}
		if countHashes(session.Buckets) == 0 {
			if session.JWT == "" {
				return "", stats, fmt.Errorf("start the asset upload of worker %q: the service returned no token", script)
			}
			return session.JWT, stats, nil
		}
		for _, bucket := range session.Buckets {
			for _, hash := range bucket {
				if _, ok := byHash[hash]; !ok {
					return "", stats, fmt.Errorf("upload assets of worker %q: the service asked for %s, which is not in the manifest", script, hash)
				}
			}
		}
		completion, err := c.uploadBuckets(ctx, session, byHash, src, &stats)
		switch {
		case errors.Is(err, ErrAssetSessionExpired):
			continue
		case err != nil:
			return "", stats, err
		case completion != "":
			return completion, stats, nil
		}
		// Every bucket went up without a completion token: a new session
		// over the same manifest finds nothing missing and returns it.
	}
	return "", stats, fmt.Errorf("upload assets of worker %q: no completion token after %d upload sessions; run pulumi up again (uploaded files are kept)",
		script, stats.Sessions)
}

// uploadBuckets sends a session's buckets, a few at a time.
func (c *Client) uploadBuckets(ctx context.Context, session AssetSession, byHash map[string]string, src AssetSource, stats *AssetUploadStats) (string, error) {
	if jwtExpired(session.JWT, time.Now()) {
		return "", ErrAssetSessionExpired
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu         sync.Mutex
		completion string
		firstErr   error
		wg         sync.WaitGroup
	)
	work := make(chan []string)
	for range min(assetUploadConcurrency, len(session.Buckets)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bucket := range work {
				token, err := c.UploadAssetBucket(ctx, session.JWT, bucket, byHash, src)
				mu.Lock()
				switch {
				case err != nil && firstErr == nil:
					firstErr = err
					cancel()
				case err == nil:
					stats.Buckets++
					stats.Files += len(bucket)
					if token != "" {
						completion = token
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, bucket := range session.Buckets {
		if len(bucket) == 0 {
			continue
		}
		select {
		case work <- bucket:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return "", firstErr
	}
	return completion, nil
}

func countHashes(buckets [][]string) int {
	n := 0
	for _, b := range buckets {
		n += len(b)
	}
	return n
}

// jwtExpired reads the exp claim of a JWT without verifying it (only the
// service can), so a session known to be over is not used for an upload.
// A token that is not a readable JWT is assumed valid.
func jwtExpired(token string, now time.Time) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return false
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return false
	}
	return !now.Before(time.Unix(claims.Exp, 0))
}
