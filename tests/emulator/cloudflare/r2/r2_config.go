package r2

// A bucket's CORS policy and object lifecycle rules:
//
//	PUT/GET/DELETE r2/buckets/{name}/cors       {rules: [{id?, allowed: {methods, origins, headers?}, exposeHeaders?, maxAgeSeconds?}]}
//	PUT/GET        r2/buckets/{name}/lifecycle  {rules: [{id, enabled, conditions: {prefix}, deleteObjectsTransition?, abortMultipartUploadsTransition?, storageClassTransitions?}]}
//
// The emulator keeps them and answers them back; it applies neither (its
// buckets are reached through the API and bindings, not a public origin,
// and it expires no objects).
//
// Documented (the R2 API reference): the routes, the bodies' fields and
// types, the methods a rule may allow (GET, PUT, POST, DELETE, HEAD), a
// transition's condition {type: Age, maxAge} or {type: Date, date}, the
// storage class InfrequentAccess, and that a new bucket has a default
// lifecycle rule aborting incomplete multipart uploads after 7 days (R2's
// object lifecycles guide). There is no DELETE lifecycle route: PUT with no
// rules empties them. Observed: a malformed CORS body is 400 10040 "The
// JSON you provided was not well formed." (workers-sdk issue 8486, an
// S3-style body). Assumed: 404 10059 for a bucket without a CORS policy
// (S3's NoSuchCORSConfiguration), the default rule's ID, and that every
// malformed rule is 10040.

import (
	"net/http"
	"slices"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

func (s *Service) registerBucketConfig() {
	const base = "/client/v4/accounts/{account_id}/r2/buckets/{bucket_name}"
	s.cf.API("PUT "+base+"/cors", cloudflare.AuthAccount, s.r2PutCORS)
	s.cf.API("GET "+base+"/cors", cloudflare.AuthAccount, s.r2GetCORS)
	s.cf.API("DELETE "+base+"/cors", cloudflare.AuthAccount, s.r2DeleteCORS)
	s.cf.API("PUT "+base+"/lifecycle", cloudflare.AuthAccount, s.r2PutLifecycle)
	s.cf.API("GET "+base+"/lifecycle", cloudflare.AuthAccount, s.r2GetLifecycle)
}

// corsRule is one rule of a bucket's CORS policy, as sent and answered.
type corsRule struct {
	ID      string `json:"id,omitempty"`
	Allowed struct {
		Methods []string `json:"methods"`
		Origins []string `json:"origins"`
		Headers []string `json:"headers,omitempty"`
	} `json:"allowed"`
	ExposeHeaders []string `json:"exposeHeaders,omitempty"`
	MaxAgeSeconds *int     `json:"maxAgeSeconds,omitempty"`
}

// lifecycleCondition is a transition's condition: {type: Age, maxAge} or
// {type: Date, date}.
type lifecycleCondition struct {
	Type   string `json:"type"`
	MaxAge *int   `json:"maxAge,omitempty"`
	Date   string `json:"date,omitempty"`
}

type lifecycleTransition struct {
	Condition *lifecycleCondition `json:"condition,omitempty"`
}

type storageClassTransition struct {
	Condition    *lifecycleCondition `json:"condition"`
	StorageClass string              `json:"storageClass"`
}

// lifecycleRule is one object lifecycle rule, as sent and answered.
type lifecycleRule struct {
	ID         string `json:"id"`
	Enabled    *bool  `json:"enabled"`
	Conditions *struct {
		Prefix *string `json:"prefix"`
	} `json:"conditions"`
	DeleteObjectsTransition         *lifecycleTransition     `json:"deleteObjectsTransition,omitempty"`
	AbortMultipartUploadsTransition *lifecycleTransition     `json:"abortMultipartUploadsTransition,omitempty"`
	StorageClassTransitions         []storageClassTransition `json:"storageClassTransitions,omitempty"`
}

// defaultLifecycle is what a bucket never given lifecycle rules has: R2's
// documented default, incomplete multipart uploads aborted after 7 days.
func defaultLifecycle() []lifecycleRule {
	enabled, prefix, week := true, "", 7*24*60*60
	r := lifecycleRule{ID: "Default Multipart Abort Rule", Enabled: &enabled,
		AbortMultipartUploadsTransition: &lifecycleTransition{Condition: &lifecycleCondition{Type: "Age", MaxAge: &week}}}
	r.Conditions = &struct {
		Prefix *string `json:"prefix"`
	}{Prefix: &prefix}
	return []lifecycleRule{r}
}

func notWellFormed(detail string) *core.APIError {
	return core.NewAPIError(http.StatusBadRequest, 10040, "The JSON you provided was not well formed. "+detail)
}

var corsMethods = []string{"GET", "PUT", "POST", "DELETE", "HEAD"}

func checkCORS(rules []corsRule) error {
	for _, r := range rules {
		if len(r.Allowed.Methods) == 0 || len(r.Allowed.Origins) == 0 {
			return notWellFormed("Each CORS rule needs allowed.methods and allowed.origins.")
		}
		for _, m := range r.Allowed.Methods {
			if !slices.Contains(corsMethods, m) {
				return notWellFormed("allowed.methods takes GET, PUT, POST, DELETE and HEAD, not " + m + ".")
			}
		}
		if r.MaxAgeSeconds != nil && *r.MaxAgeSeconds < 0 {
			return notWellFormed("maxAgeSeconds must not be negative.")
		}
	}
	return nil
}

func checkCondition(c *lifecycleCondition, what string) error {
	switch {
	case c == nil:
		return nil
	case c.Type == "Age" && c.MaxAge != nil && *c.MaxAge > 0:
		return nil
	case c.Type == "Date":
		if _, err := time.Parse(time.RFC3339, c.Date); err == nil {
			return nil
		}
	}
	return notWellFormed(what + ".condition must be {type: Age, maxAge: <seconds>} or {type: Date, date: <RFC 3339>}.")
}

func checkLifecycle(rules []lifecycleRule) error {
	ids := map[string]bool{}
	for _, r := range rules {
		if r.ID == "" || r.Enabled == nil || r.Conditions == nil || r.Conditions.Prefix == nil {
			return notWellFormed("Each lifecycle rule needs id, enabled and conditions.prefix.")
		}
		if ids[r.ID] {
			return notWellFormed("Lifecycle rule IDs must be unique: " + r.ID + " appears twice.")
		}
		ids[r.ID] = true
		if t := r.DeleteObjectsTransition; t != nil {
			if err := checkCondition(t.Condition, "deleteObjectsTransition"); err != nil {
				return err
			}
		}
		if t := r.AbortMultipartUploadsTransition; t != nil {
			if t.Condition != nil && t.Condition.Type != "Age" {
				return notWellFormed("abortMultipartUploadsTransition.condition must be of type Age.")
			}
			if err := checkCondition(t.Condition, "abortMultipartUploadsTransition"); err != nil {
				return err
			}
		}
		for _, t := range r.StorageClassTransitions {
			if t.StorageClass != "InfrequentAccess" || t.Condition == nil {
				return notWellFormed("storageClassTransitions need a condition and storageClass InfrequentAccess.")
			}
			if err := checkCondition(t.Condition, "storageClassTransitions"); err != nil {
				return err
			}
		}
	}
	return nil
}

// bucketDo runs f on the path's bucket under s.mu.
func (s *Service) bucketDo(r *http.Request, f func(b *r2Bucket) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.st.R2[r2Key(r.PathValue("account_id"), r.PathValue("bucket_name"))]
	if !ok {
		return r2NoSuchBucket()
	}
	return f(b)
}

func (s *Service) r2PutCORS(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Rules []corsRule `json:"rules"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, notWellFormed(""))
		return
	}
	if err := checkCORS(body.Rules); err != nil {
		core.WriteError(w, err)
		return
	}
	err := s.bucketDo(r, func(b *r2Bucket) error {
		b.CORS = body.Rules
		if b.CORS == nil {
			b.CORS = []corsRule{}
		}
		return nil
	})
	s.saveAndRespond(w, err, map[string]any{})
}

func (s *Service) r2GetCORS(w http.ResponseWriter, r *http.Request) {
	var out map[string][]corsRule
	err := s.bucketDo(r, func(b *r2Bucket) error {
		if b.CORS == nil {
			return core.NewAPIError(http.StatusNotFound, 10059, "The CORS configuration does not exist.")
		}
		out = map[string][]corsRule{"rules": slices.Clone(b.CORS)}
		return nil
	})
	core.Respond(w, err, out)
}

func (s *Service) r2DeleteCORS(w http.ResponseWriter, r *http.Request) {
	err := s.bucketDo(r, func(b *r2Bucket) error {
		b.CORS = nil
		return nil
	})
	s.saveAndRespond(w, err, map[string]any{})
}

func (s *Service) r2PutLifecycle(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Rules []lifecycleRule `json:"rules"`
	}
	if err := core.DecodeJSON(w, r, &body); err != nil {
		core.WriteError(w, notWellFormed(""))
		return
	}
	if err := checkLifecycle(body.Rules); err != nil {
		core.WriteError(w, err)
		return
	}
	err := s.bucketDo(r, func(b *r2Bucket) error {
		b.Lifecycle = body.Rules
		if b.Lifecycle == nil {
			b.Lifecycle = []lifecycleRule{}
		}
		return nil
	})
	s.saveAndRespond(w, err, map[string]any{})
}

func (s *Service) r2GetLifecycle(w http.ResponseWriter, r *http.Request) {
	var out map[string][]lifecycleRule
	err := s.bucketDo(r, func(b *r2Bucket) error {
		rules := b.Lifecycle
		if rules == nil {
			rules = defaultLifecycle()
		}
		out = map[string][]lifecycleRule{"rules": slices.Clone(rules)}
		return nil
	})
	core.Respond(w, err, out)
}
