package emulator

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// registerAdmin mounts the test-control API under /__emulator/. It is plain
// JSON (no Cloudflare envelope), needs no token and is never counted, so
// scripts driving the standalone binary can inspect and steer it without
// disturbing what they measure.
func (s *Server) registerAdmin() {
	s.mux.HandleFunc("GET /__emulator/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	s.mux.HandleFunc("GET /__emulator/requests", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"counts": s.Counts(), "cloudflare_calls": s.CloudflareCalls()})
	})
	s.mux.HandleFunc("DELETE /__emulator/requests", func(w http.ResponseWriter, r *http.Request) {
		s.ResetCounts()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /__emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": s.activeFaults(), "holds": s.Holds()})
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
			err = s.injectFault(f)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"faults": s.activeFaults()})
	})
	s.mux.HandleFunc("DELETE /__emulator/faults", func(w http.ResponseWriter, r *http.Request) {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("GET /__emulator/inventory", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Inventory())
	})
	// Object upload for the standalone binary, where PutR2Object is out of
	// reach: the body is the object.
	s.mux.HandleFunc("PUT /__emulator/r2/{account_id}/{bucket_name}/{key...}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err == nil {
			err = s.PutR2Object(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key"), body)
		}
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrNoSuchBucket) {
				status = http.StatusNotFound
			}
			adminError(w, status, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("DELETE /__emulator/r2/{account_id}/{bucket_name}/{key...}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.DeleteR2Object(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key")); err != nil {
			adminError(w, http.StatusNotFound, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("/__emulator/", func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, errors.New("no admin route "+r.Method+" "+r.URL.Path))
	})
}

func adminError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
