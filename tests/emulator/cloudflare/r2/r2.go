package r2

import (
	"encoding/base64"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Register mounts the routes of the API.
func (s *Service) Register() {
	const base = "/client/v4/accounts/{account_id}/r2/buckets"
	s.cf.API("POST "+base, cloudflare.AuthAccount, s.r2Create)
	s.cf.API("GET "+base, cloudflare.AuthAccount, s.r2List)
	s.cf.API("GET "+base+"/{bucket_name}", cloudflare.AuthAccount, s.r2Get)
	s.cf.API("DELETE "+base+"/{bucket_name}", cloudflare.AuthAccount, s.r2Delete)
	s.registerR2Objects()
	s.registerBucketConfig()
	s.registerAdmin()
}

// r2NameRE is R2's bucket naming rule: 3-63 of [a-z0-9-], not starting or
// ending with a hyphen.
var r2NameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

var r2Locations = map[string]bool{"apac": true, "eeur": true, "enam": true, "weur": true, "wnam": true, "oc": true}

var r2StorageClasses = map[string]bool{"Standard": true, "InfrequentAccess": true}

type r2BucketJSON struct {
	Name         string `json:"name"`
	CreationDate string `json:"creation_date"`
	Location     string `json:"location"`
	StorageClass string `json:"storage_class"`
	// Jurisdiction is "default": the emulator has no EU or FedRAMP
	// jurisdiction (buckets there are addressed with cf-r2-jurisdiction).
	Jurisdiction string `json:"jurisdiction"`
}

func (b *r2Bucket) json() r2BucketJSON {
	return r2BucketJSON{
		Jurisdiction: "default",
		Name:         b.Name,
		CreationDate: b.CreationDate.UTC().Format("2006-01-02T15:04:05.000Z"),
		Location:     strings.ToLower(b.Location), // state written before lower-case
		StorageClass: b.StorageClass,
	}
}

func r2NoSuchBucket() *core.APIError {
	return core.NewAPIError(http.StatusNotFound, 10006, "The specified bucket does not exist.")
}

func (s *Service) r2Create(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	var body struct {
		Name         string `json:"name"`
		LocationHint string `json:"locationHint"`
		StorageClass string `json:"storageClass"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	if !r2NameRE.MatchString(body.Name) {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10005, "The specified bucket name is not valid."))
		return
	}
	loc := strings.ToLower(body.LocationHint)
	if loc == "" {
		loc = "enam"
	}
	if !r2Locations[loc] {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10040, "The specified location hint is not valid."))
		return
	}
	class := body.StorageClass
	if class == "" {
		class = "Standard"
	}
	if !r2StorageClasses[class] {
		core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10040, "The specified storage class is not valid."))
		return
	}

	s.mu.Lock()
	if _, exists := s.st.R2[r2Key(acct, body.Name)]; exists {
		s.mu.Unlock()
		core.WriteError(w, core.NewAPIError(http.StatusConflict, 10004, "The bucket you tried to create already exists, and you own it."))
		return
	}
	// The location in the case the SDKs declare it (TypeScript:
	// 'apac' | 'eeur' | 'enam' | …; Python: a Literal of the same, which
	// strict validation enforces). Some real answers have been upper-case
	// (the Terraform provider compares case-insensitively since its PR
	// 6026), so clients should cope with both; the emulator gives the
	// declared form.
	b := &r2Bucket{AccountID: acct, Name: body.Name, CreationDate: time.Now().UTC(),
		Location: loc, StorageClass: class, Objects: map[string]*r2Object{}}
	s.st.R2[r2Key(acct, b.Name)] = b
	out := b.json()
	s.mu.Unlock()
	if err := s.save(); err != nil {
		core.WriteError(w, err)
		return
	}
	core.WriteResult(w, out)
}

// r2List pages by cursor (R2 has no page numbers). The cursor is opaque to
// clients; here it encodes the last name returned.
func (s *Service) r2List(w http.ResponseWriter, r *http.Request) {
	acct := r.PathValue("account_id")
	q := r.URL.Query()
	perPage := 20
	if v, err := strconv.ParseFloat(q.Get("per_page"), 64); err == nil && v >= 1 {
		perPage = min(int(v), 1000)
	}
	contains := q.Get("name_contains")
	desc := q.Get("direction") == "desc"
	after := q.Get("start_after")
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil {
			core.WriteError(w, core.NewAPIError(http.StatusBadRequest, 10040, "The specified cursor is not valid."))
			return
		}
		after = string(b)
	}

	s.mu.Lock()
	var all []r2BucketJSON
	for _, b := range s.st.R2 {
		if b.AccountID == acct && strings.Contains(b.Name, contains) {
			all = append(all, b.json())
		}
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if desc {
			return all[i].Name > all[j].Name
		}
		return all[i].Name < all[j].Name
	})
	if after != "" {
		i := sort.Search(len(all), func(i int) bool {
			if desc {
				return all[i].Name < after
			}
			return all[i].Name > after
		})
		all = all[i:]
	}
	info := map[string]any{"per_page": perPage}
	if len(all) > perPage {
		all = all[:perPage]
		info["cursor"] = base64.RawURLEncoding.EncodeToString([]byte(all[perPage-1].Name))
	}
	if all == nil {
		all = []r2BucketJSON{}
	}
	core.WriteEnvelope(w, http.StatusOK, map[string]any{"buckets": all}, info, nil)
}

func (s *Service) r2Get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))]
	var out r2BucketJSON
	if ok {
		out = b.json()
	}
	s.mu.Unlock()
	if !ok {
		core.WriteError(w, r2NoSuchBucket())
		return
	}
	core.WriteResult(w, out)
}

func (s *Service) r2Delete(w http.ResponseWriter, r *http.Request) {
	key := r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))
	s.mu.Lock()
	b, ok := s.st.R2[key]
	var err error
	switch {
	case !ok:
		err = r2NoSuchBucket()
	case len(b.Objects) > 0:
		err = core.NewAPIError(http.StatusConflict, 10008, "The bucket you tried to delete is not empty.")
	default:
		delete(s.st.R2, key)
	}
	s.mu.Unlock()
	s.saveAndRespond(w, err, map[string]any{})
}

// ErrNoSuchBucket is returned by PutObject and DeleteObject for a bucket that does not
// exist in the account.
var ErrNoSuchBucket = errors.New("emulator: no such R2 bucket")

// PutObject stores an object in an existing bucket, as the object routes
// of r2_objects.go do; tests use it to make a bucket non-empty.
func (s *Service) PutObject(accountID, bucket, key string, body []byte) error {
	if key == "" {
		return errors.New("emulator: empty R2 object key")
	}
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(accountID, bucket)]
	if ok {
		b.Objects[key] = &r2Object{Body: append([]byte(nil), body...), Uploaded: time.Now().UTC()}
	}
	s.mu.Unlock()
	if !ok {
		return ErrNoSuchBucket
	}
	return s.save()
}

// DeleteObject removes an object; deleting a missing object succeeds, as
// in S3.
func (s *Service) DeleteObject(accountID, bucket, key string) error {
	s.mu.Lock()
	b, ok := s.st.R2[r2Key(accountID, bucket)]
	if ok {
		delete(b.Objects, key)
	}
	s.mu.Unlock()
	if !ok {
		return ErrNoSuchBucket
	}
	return s.save()
}
