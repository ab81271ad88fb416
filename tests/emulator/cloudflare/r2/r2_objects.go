package r2

// R2 object routes under the v4 API, the ones `wrangler r2 object
// put/get/delete --remote` uses (the S3 API is the documented way; these
// exist for Cloudflare's own tools): PUT stores the raw body, GET answers it
// raw, DELETE removes it. A missing bucket is 404 10006 and a missing object
// 404 10007 "The specified key does not exist." (inferred from the S3
// NoSuchKey wording); wrangler reads any 404 as "no such bucket/object".

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerR2Objects() {
	const base = "/client/v4/accounts/{account_id}/r2/buckets/{bucket_name}/objects/{object_key...}"
	s.cf.API("PUT "+base, cloudflare.AuthAccount, s.r2PutObject)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.r2GetObject)
	s.cf.API("DELETE "+base, cloudflare.AuthAccount, s.r2DeleteObject)
}

func r2NoSuchKey() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10007, "The specified key does not exist.")
}

type r2ObjectJSON struct {
	Key          string `json:"key"`
	Etag         string `json:"etag"`
	Size         int    `json:"size"`
	Uploaded     string `json:"uploaded"`
	StorageClass string `json:"storage_class"`
	HTTPMetadata struct {
		ContentType string `json:"contentType,omitempty"`
	} `json:"http_metadata"`
}

func (s *Service) r2PutObject(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("object_key")
	if key == "" {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10020, "The specified object name is not valid."))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
	if err != nil {
		core.WriteError(w, core.NewAPIError(http.StatusRequestEntityTooLarge, 10020, "The object is too large for the emulator."))
		return
	}
	obj := &r2Object{Body: body, Uploaded: time.Now().UTC(), ContentType: r.Header.Get("Content-Type")}
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))]
	class := ""
	if ok {
		b.Objects[key] = obj
		class = b.StorageClass
	}
	s.mu.Unlock()
	if !ok {
		core.WriteError(w, r2NoSuchBucket())
		return
	}
	out := r2ObjectJSON{Key: key, Etag: r2ObjectEtag(body), Size: len(body), Uploaded: cloudflare.Time(obj.Uploaded), StorageClass: class}
	out.HTTPMetadata.ContentType = obj.ContentType
	s.saveAndRespond(w, nil, out)
}

func (s *Service) r2GetObject(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))]
	var obj *r2Object
	if ok {
		obj = b.Objects[r.PathValue("object_key")]
	}
	s.mu.Unlock()
	switch {
	case !ok:
		core.WriteError(w, r2NoSuchBucket())
		return
	case obj == nil:
		core.WriteError(w, r2NoSuchKey())
		return
	}
	ct := obj.ContentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", strconv.Itoa(len(obj.Body)))
	w.Header().Set("ETag", strconv.Quote(r2ObjectEtag(obj.Body)))
	w.Header().Set("Last-Modified", obj.Uploaded.UTC().Format(http.TimeFormat))
	_, _ = w.Write(obj.Body)
}

// r2DeleteObject removes an object; a missing object is not an error (S3
// deletes are idempotent).
func (s *Service) r2DeleteObject(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))]
	if ok {
		delete(b.Objects, r.PathValue("object_key"))
	}
	s.mu.Unlock()
	if !ok {
		core.WriteError(w, r2NoSuchBucket())
		return
	}
	s.saveAndRespond(w, nil, map[string]any{})
}
