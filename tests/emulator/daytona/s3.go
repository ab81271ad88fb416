package daytona

// A minimal S3-compatible endpoint for Daytona build contexts: what the
// Daytona SDKs' object storage clients send when an image adds a local
// directory or file. The Go SDK (aws-sdk-go-v2, path-style) lists
// (ListObjectsV2) to see whether a context hash is already uploaded, then
// PutObjects a tar archive; the Python SDK 0.161.0 (obstore, path-style)
// asks with HeadObject, then streams the tar as a multipart upload
// (s3multipart.go).
//
// Requests are identified by the access key in their SigV4 Authorization
// header (and the session token, when sent), which must be one
// GET /object-storage/push-access handed out. Signatures are NOT verified:
// the emulator is a loopback test double and recomputing SigV4 would add
// nothing a test could observe. Keys must lie under the caller's
// organization ID, the way Daytona's scoped credentials confine uploads
// (inferred: the real policy is not visible to clients).

import (
	"archive/tar"
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

const (
	s3Prefix = daytonaPrefix + "s3"
	// s3MaxObject bounds one upload; build contexts are source trees.
	s3MaxObject = 256 << 20
	// s3MaxEntries bounds how many archive members are remembered.
	s3MaxEntries = 100000
)

func (s *Service) registerS3() {
	s.s3Route("GET "+s3Prefix+"/{bucket}", s.s3List)
	s.s3Route("GET "+s3Prefix+"/{bucket}/{key...}", s.s3GetObject)
	s.s3Route("PUT "+s3Prefix+"/{bucket}/{key...}", s.s3PutObject)
	s.s3Route("POST "+s3Prefix+"/{bucket}/{key...}", s.s3PostObject)
	const other = s3Prefix + "/{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator implements ListObjectsV2, HeadObject, PutObject and multipart uploads only.")
	})
}

// s3Route counts, applies faults (in S3's error format) and authenticates
// like daytonaRoute.
func (s *Service) s3Route(pattern string, h func(w http.ResponseWriter, r *http.Request, org string)) {
	method, route, _ := strings.Cut(pattern, " ")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(pattern, false)
		delay, f := s.core.TakeFaults(r.Method, route)
		if r.Method == http.MethodHead && method == http.MethodGet && delay == 0 && f == nil {
			delay, f = s.core.TakeFaults(http.MethodGet, route)
		}
		if s.core.ServeFault(w, r, delay, f, s3FaultAnswers(r)) {
			return
		}
		org, code, msg := s.s3Authorize(r)
		if code != "" {
			writeS3Error(w, r, http.StatusForbidden, code, msg)
			return
		}
		if b := r.PathValue("bucket"); b != Bucket {
			writeS3Error(w, r, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
			return
		}
		h(w, r, org)
	})
}

// s3Authorize finds the organization whose push-access key signed r.
func (d *Service) s3Authorize(r *http.Request) (org, code, msg string) {
	akid := ""
	if h := r.Header.Get("Authorization"); h != "" {
		if _, cred, ok := strings.Cut(h, "Credential="); ok {
			akid, _, _ = strings.Cut(cred, "/")
		}
	} else if cred := r.URL.Query().Get("X-Amz-Credential"); cred != "" {
		akid, _, _ = strings.Cut(cred, "/")
	}
	if akid == "" {
		return "", "AccessDenied", "Access Denied"
	}
	for _, o := range d.keys {
		ak, _, session := pushAccessKeys(o)
		if ak != akid {
			continue
		}
		tok := r.Header.Get("X-Amz-Security-Token")
		if tok == "" {
			tok = r.URL.Query().Get("X-Amz-Security-Token")
		}
		if tok != "" && tok != session {
			return "", "InvalidToken", "The provided token is malformed or otherwise invalid."
		}
		return o, "", ""
	}
	return "", "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
}

type s3ErrorXML struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string   `xml:"Code"`
	Message   string   `xml:"Message"`
	Resource  string   `xml:"Resource"`
	RequestID string   `xml:"RequestId"`
}

func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	writeXML(w, status, s3ErrorXML{Code: code, Message: msg, Resource: strings.TrimPrefix(r.URL.Path, s3Prefix), RequestID: core.NewHexID()[:16]})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(b)
}

// s3FaultAnswers: S3 throttles with 503 SlowDown rather than 429.
func s3FaultAnswers(r *http.Request) core.FaultAnswers {
	return core.FaultAnswers{
		RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
			writeS3Error(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		},
		ServerError: func(w http.ResponseWriter, f *core.Fault) {
			writeS3Error(w, r, f.Status, "InternalError", "We encountered an internal error. Please try again.")
		},
	}
}

func orgPrefixAllowed(org, key string) bool { return strings.HasPrefix(key, org+"/") }

type s3ListResult struct {
	XMLName               xml.Name     `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string       `xml:"Name"`
	Prefix                string       `xml:"Prefix"`
	StartAfter            string       `xml:"StartAfter,omitempty"`
	ContinuationToken     string       `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string       `xml:"NextContinuationToken,omitempty"`
	KeyCount              int          `xml:"KeyCount"`
	MaxKeys               int          `xml:"MaxKeys"`
	IsTruncated           bool         `xml:"IsTruncated"`
	Contents              []s3Contents `xml:"Contents"`
}

type s3Contents struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
}

// s3List is ListObjectsV2 (list-type=2) with prefix, max-keys, start-after
// and continuation tokens; delimiters are not supported.
func (s *Service) s3List(w http.ResponseWriter, r *http.Request, org string) {
	q := r.URL.Query()
	if q.Get("list-type") != "2" {
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator implements ListObjectsV2 (list-type=2) only.")
		return
	}
	if q.Get("delimiter") != "" {
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator does not implement delimiters.")
		return
	}
	prefix := q.Get("prefix")
	if !orgPrefixAllowed(org, prefix) {
		writeS3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied")
		return
	}
	maxKeys := 1000
	if v, err := strconv.Atoi(q.Get("max-keys")); err == nil && v >= 0 {
		maxKeys = min(v, 1000)
	}
	after := q.Get("start-after")
	token := q.Get("continuation-token")
	if token != "" {
		b, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			writeS3Error(w, r, http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect")
			return
		}
		after = string(b)
	}
	d := s
	d.mu.Lock()
	var keys []string
	for k := range d.st.Objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := s3ListResult{Name: Bucket, Prefix: prefix, StartAfter: q.Get("start-after"), ContinuationToken: token, MaxKeys: maxKeys, Contents: []s3Contents{}}
	if len(keys) > maxKeys {
		keys = keys[:maxKeys]
		res.IsTruncated = true
		if maxKeys > 0 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(keys[maxKeys-1]))
		}
	}
	for _, k := range keys {
		o := d.st.Objects[k]
		res.Contents = append(res.Contents, s3Contents{Key: k, LastModified: o.Uploaded.UTC().Format("2006-01-02T15:04:05.000Z"),
			ETag: `"` + o.ETag + `"`, Size: o.Size, StorageClass: "STANDARD"})
	}
	res.KeyCount = len(res.Contents)
	d.mu.Unlock()
	writeXML(w, http.StatusOK, res)
}

// s3GetObject: a GET on "bucket/" is a listing; a HEAD on a key says
// whether the object exists (what the Python SDK asks before uploading a
// context); object bodies are not kept, so reading one is not implemented.
func (s *Service) s3GetObject(w http.ResponseWriter, r *http.Request, org string) {
	if r.PathValue("key") == "" {
		s.s3List(w, r, org)
		return
	}
	if r.Method == http.MethodHead {
		s.s3HeadObject(w, r, org)
		return
	}
	writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator keeps no object bodies; GetObject is not implemented.")
}

// s3PutObject stores an object's metadata and, for a tar archive, the list
// of its members, which builds check COPY sources against. Content-MD5 and
// a CRC32 checksum are verified when sent, as S3 does.
func (s *Service) s3PutObject(w http.ResponseWriter, r *http.Request, org string) {
	key := r.PathValue("key")
	if key == "" {
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator does not implement bucket operations.")
		return
	}
	if !orgPrefixAllowed(org, key) {
		writeS3Error(w, r, http.StatusForbidden, "AccessDenied", "Access Denied")
		return
	}
	if q := r.URL.Query(); q.Has("uploadId") || q.Has("partNumber") {
		s.s3UploadPart(w, r, org, key)
		return
	}
	if strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") || strings.HasPrefix(r.Header.Get("X-Amz-Content-Sha256"), "STREAMING-") {
		// aws-sdk-go-v2 only streams chunked payloads over TLS; the
		// emulator speaks plain HTTP.
		writeS3Error(w, r, http.StatusNotImplemented, "NotImplemented", "The emulator does not accept aws-chunked payloads.")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s3MaxObject))
	if err != nil {
		writeS3Error(w, r, http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size.")
		return
	}
	sum := md5.Sum(body)
	if want := r.Header.Get("Content-MD5"); want != "" && want != base64.StdEncoding.EncodeToString(sum[:]) {
		writeS3Error(w, r, http.StatusBadRequest, "BadDigest", "The Content-MD5 you specified did not match what we received.")
		return
	}
	if want := r.Header.Get("X-Amz-Checksum-Crc32"); want != "" {
		var c [4]byte
		binary.BigEndian.PutUint32(c[:], crc32.ChecksumIEEE(body))
		if want != base64.StdEncoding.EncodeToString(c[:]) {
			writeS3Error(w, r, http.StatusBadRequest, "BadDigest", "The CRC32 you specified did not match the calculated checksum.")
			return
		}
	}
	o, err := s.storeObject(key, body, hex.EncodeToString(sum[:]))
	if err != nil {
		writeS3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	}
	w.Header().Set("ETag", `"`+o.ETag+`"`)
	w.WriteHeader(http.StatusOK)
}

// storeObject records an uploaded object (its size, ETag and, for a tar
// archive, its members) and saves the state.
func (s *Service) storeObject(key string, body []byte, etag string) (*dtObject, error) {
	o := &dtObject{Size: int64(len(body)), ETag: etag, Uploaded: time.Now().UTC()}
	var err error
	o.Entries, err = tarEntries(body)
	if err != nil {
		o.TarErr = err.Error()
	}
	s.mu.Lock()
	s.st.Objects[key] = o
	s.mu.Unlock()
	return o, s.save()
}

// tarEntries lists an archive's members as context-relative paths.
func tarEntries(body []byte) ([]string, error) {
	tr := tar.NewReader(bytes.NewReader(body))
	var out []string
	for len(out) < s3MaxEntries {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if len(out) == 0 {
				return nil, errors.New("archive is empty")
			}
			return out, nil
		}
		if err != nil {
			return nil, errors.New("not a tar archive: " + err.Error())
		}
		if name := strings.TrimPrefix(path.Clean("/"+h.Name), "/"); name != "" {
			out = append(out, name)
		}
	}
	return out, nil
}
