package anthropic

// Passing model calls through to a real Messages API, for people whose
// machine reaches it: the stand-in still checks the installation's seeded
// key (so a wrong key fails a session as before), then forwards the
// request with the person's own key and streams the answer back as it
// comes.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// PassThrough is where model calls go instead of the script.
type PassThrough struct {
	// URL is the API's base, as ANTHROPIC_BASE_URL is given
	// (https://api.anthropic.com/v1); the request goes to URL + /messages.
	URL string
	// APIKey is the person's own key, sent as x-api-key.
	APIKey string
	// Client sends the requests (default: a client with no timeout, as a
	// stream may be long; the request's context ends it).
	Client *http.Client
}

// Validate says what is wrong with p, naming the field.
func (p PassThrough) Validate() error {
	if p.URL == "" {
		return nil
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return errors.New("anthropic pass-through: URL must be an http(s) URL such as https://api.anthropic.com/v1")
	}
	if p.APIKey == "" {
		return errors.New("anthropic pass-through: APIKey is empty: the person's own key is needed to reach the real API")
	}
	return nil
}

// forwardedHeaders are the request headers the API reads besides the key.
var forwardedHeaders = []string{"Content-Type", "Accept", "anthropic-version", "anthropic-beta", "User-Agent"}

func (s *Service) passThrough(w http.ResponseWriter, r *http.Request, body []byte, ex Exchange) {
	p := s.opts.PassThrough
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, strings.TrimSuffix(p.URL, "/")+"/messages", bytes.NewReader(body))
	if err != nil {
		ex.Status, ex.Error = http.StatusBadGateway, "api_error"
		s.record(ex)
		writeError(w, http.StatusBadGateway, "api_error", "the pass-through URL is not usable")
		return
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	req.Header.Set("x-api-key", p.APIKey)
	client := p.Client
	if client == nil {
		client = &http.Client{}
	}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		ex.Status, ex.Error = http.StatusBadGateway, "api_error"
		s.record(ex)
		// The error names the URL, never the key.
		writeError(w, http.StatusBadGateway, "api_error", "the model API could not be reached through the pass-through: "+redactedErr(err))
		return
	}
	defer res.Body.Close()
	for _, h := range []string{"Content-Type", "request-id", "anthropic-ratelimit-requests-remaining", "retry-after"} {
		if v := res.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(res.StatusCode)
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) && s.opts.Logf != nil {
				s.opts.Logf("anthropic: pass-through stream ended: %v", rerr)
			}
			break
		}
	}
	ex.Status = res.StatusCode
	if res.StatusCode >= 400 {
		ex.Error = "upstream_" + http.StatusText(res.StatusCode)
	}
	s.record(ex)
	if s.opts.Logf != nil {
		s.opts.Logf("anthropic: passed %s through to %s: %d (%s)", ex.Model, p.URL, res.StatusCode, time.Since(start).Round(time.Millisecond))
	}
}

// redactedErr is err's text: the transport's errors carry the URL, not
// the headers, so it is safe to show.
func redactedErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + ue.URL + ": " + ue.Err.Error()
	}
	return err.Error()
}
