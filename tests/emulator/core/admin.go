package core

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// RegisterAdmin mounts the core of the test-control API under /__emulator/:
// health, request counts and faults. It is plain JSON (no Cloudflare
// envelope), needs no token and is never counted, so scripts driving the
// standalone binary can inspect and steer it without disturbing what they
// measure. Families add their own /__emulator/ routes next to these; any
// other path under /__emulator/ is a 404.
func (s *Core) RegisterAdmin() {
	s.mux.HandleFunc("GET /__emulator/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	s.mux.HandleFunc("GET /__emulator/requests", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"counts": s.Counts(), "cloudflare_calls": s.CloudflareCalls(),
			"cloudflare_bytes": s.CloudflareBytes()})
	})
	s.mux.HandleFunc("DELETE /__emulator/requests", func(w http.ResponseWriter, r *http.Request) {
		s.ResetCounts()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /__emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"faults": s.ActiveFaults(), "holds": s.Holds()})
	})
	s.mux.HandleFunc("POST /__emulator/faults/release", func(w http.ResponseWriter, r *http.Request) {
		s.ReleaseHolds()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("POST /__emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(body, &f)
		}
		if err == nil {
			err = s.AddFault(f)
		}
		if err != nil {
			AdminError(w, http.StatusBadRequest, err)
			return
		}
		WriteJSON(w, http.StatusCreated, map[string]any{"faults": s.ActiveFaults()})
	})
	s.mux.HandleFunc("DELETE /__emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	// {"requests": 1200, "window": "5m"} enforces Cloudflare's limit per
	// token ({} uses Cloudflare's figures, {"requests": 0} turns it off);
	// GET reports it and how many calls it refused.
	s.mux.HandleFunc("POST /__emulator/ratelimit", func(w http.ResponseWriter, r *http.Request) {
		var j struct {
			Requests *int   `json:"requests"`
			Window   string `json:"window"`
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil && len(body) > 0 {
			err = json.Unmarshal(body, &j)
		}
		l := RateLimit{Requests: CloudflareRateLimitRequests, Window: CloudflareRateLimitWindow}
		if j.Requests != nil {
			l.Requests = *j.Requests
		}
		if err == nil && j.Window != "" {
			l.Window, err = time.ParseDuration(j.Window)
		}
		if err == nil {
			err = s.SetRateLimit(l)
		}
		if err != nil {
			AdminError(w, http.StatusBadRequest, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /__emulator/ratelimit", func(w http.ResponseWriter, r *http.Request) {
		s.limiter.mu.Lock()
		l := s.limiter.limit
		s.limiter.mu.Unlock()
		WriteJSON(w, http.StatusOK, map[string]any{"requests": l.Requests, "window": l.Window.String(), "refused": s.RateLimited()})
	})
	s.mux.HandleFunc("/__emulator/", func(w http.ResponseWriter, r *http.Request) {
		AdminError(w, http.StatusNotFound, errors.New("no admin route "+r.Method+" "+r.URL.Path))
	})
}

// AdminError answers an admin request with {"error": ...}.
func AdminError(w http.ResponseWriter, status int, err error) {
	WriteJSON(w, status, map[string]string{"error": err.Error()})
}

// AdminDecode reads an admin request's JSON body (at most 1 MiB) into v; an
// empty body leaves v as it is.
func AdminDecode(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return nil
	}
	return json.Unmarshal(body, v)
}
