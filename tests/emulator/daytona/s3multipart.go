package daytona

// HeadObject and multipart uploads, as the Daytona Python SDK 0.161.0's
// object storage client (obstore's S3Store) sends them for a build
// context: HEAD <org>/<hash>/context.tar (404 means "upload it"), then
// CreateMultipartUpload (POST ?uploads), UploadPart (PUT ?partNumber&
// uploadId) and CompleteMultipartUpload (POST ?uploadId), because the
// context is streamed as an iterable of unknown length. Parts live in
// memory until completed (a restart loses uploads in flight, which the
// client then fails; it never resumes one).

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// s3Upload is a multipart upload in flight.
type s3Upload struct {
	org, key string
	parts    map[int][]byte
	size     int
}

// s3HeadObject answers 200 with the object's size and ETag, or 404 with no
// body (a HEAD answer has none).
func (s *Service) s3HeadObject(w http.ResponseWriter, r *http.Request, org string) {
	key := r.PathValue("key")
	s.mu.Lock()
	o, found := s.st.Objects[key]
	var size int64
	var etag string
	if found {
		size, etag = o.Size, o.ETag
	}
	s.mu.Unlock()
	if !found || !orgPrefixAllowed(org, key) {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.Header().Set("ETag", `"`+etag+`"`)
	w.Header().Set("Last-Modified", o.Uploaded.UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusOK)
}

type s3InitiateResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

type s3CompleteRequest struct {
	Parts []struct {
		PartNumber int    `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

type s3CompleteResult struct {
	XMLName  xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

// s3PostObject is CreateMultipartUpload (?uploads) or
// CompleteMultipartUpload (?uploadId=).
func (s *Service) s3PostObject(w http.ResponseWriter, r *http.Request, org string) {
	key := r.PathValue("key")
	if !orgPrefixAllowed(org, key) {
		writeS3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied")
		return
	}
	q := r.URL.Query()
	switch {
	case q.Has("uploads"):
		id := core.NewHexID()
		s.mu.Lock()
		if s.uploads == nil {
			s.uploads = map[string]*s3Upload{}
		}
		s.uploads[id] = &s3Upload{org: org, key: key, parts: map[int][]byte{}}
		s.mu.Unlock()
		writeXML(w, http.StatusOK, s3InitiateResult{Bucket: Bucket, Key: key, UploadID: id})
	case q.Get("uploadId") != "":
		s.s3CompleteUpload(w, r, org, key, q.Get("uploadId"))
	default:
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator implements POST for multipart uploads only.")
	}
}

// s3UploadPart stores one part of an upload in flight.
func (s *Service) s3UploadPart(w http.ResponseWriter, r *http.Request, org, key string) {
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || n < 1 || n > 10000 {
		writeS3Error(w, r, http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s3MaxObject))
	if err != nil {
		writeS3Error(w, r, http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.")
		return
	}
	s.mu.Lock()
	up, found := s.uploads[q.Get("uploadId")]
	tooBig := false
	if found && up.org == org && up.key == key {
		tooBig = up.size-len(up.parts[n])+len(body) > s3MaxObject
		if !tooBig {
			up.size += len(body) - len(up.parts[n])
			up.parts[n] = body
		}
	}
	s.mu.Unlock()
	switch {
	case !found || up.org != org || up.key != key:
		writeS3Error(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
		return
	case tooBig:
		writeS3Error(w, r, http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.")
		return
	}
	sum := md5.Sum(body)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	w.WriteHeader(http.StatusOK)
}

// s3CompleteUpload joins the listed parts in order into the object. The
// ETag is S3's multipart form: the MD5 of the parts' MD5s, "-<count>".
func (s *Service) s3CompleteUpload(w http.ResponseWriter, r *http.Request, org, key, id string) {
	var req s3CompleteRequest
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil {
		err = xml.Unmarshal(raw, &req)
	}
	if err != nil || len(req.Parts) == 0 {
		writeS3Error(w, r, http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
		return
	}
	s.mu.Lock()
	up, found := s.uploads[id]
	found = found && up.org == org && up.key == key
	var parts map[int][]byte
	if found {
		parts = maps.Clone(up.parts)
	}
	s.mu.Unlock()
	if !found {
		writeS3Error(w, r, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
		return
	}
	sort.SliceStable(req.Parts, func(i, j int) bool { return req.Parts[i].PartNumber < req.Parts[j].PartNumber })
	var body []byte
	sums := md5.New()
	for _, p := range req.Parts {
		part, ok := parts[p.PartNumber]
		sum := md5.Sum(part)
		if !ok || strings.Trim(p.ETag, `"`) != hex.EncodeToString(sum[:]) {
			writeS3Error(w, r, http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.")
			return
		}
		sums.Write(sum[:])
		body = append(body, part...)
	}
	etag := fmt.Sprintf("%s-%d", hex.EncodeToString(sums.Sum(nil)), len(req.Parts))
	// S3 keeps an upload until it completes (or is aborted): a refused
	// completion may be sent again.
	s.mu.Lock()
	delete(s.uploads, id)
	s.mu.Unlock()
	if _, err := s.storeObject(key, body, etag); err != nil {
		writeS3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	}
	writeXML(w, http.StatusOK, s3CompleteResult{Location: r.URL.Path, Bucket: Bucket, Key: key, ETag: `"` + etag + `"`})
}
