package emulator

import (
	"errors"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"io"
	"net/http"
)

// registerAdmin mounts the admin routes that read or write Cloudflare state
// (inventory, R2 objects) next to core's (health, counts, faults).
func (s *Server) registerAdmin() {
	s.mux.HandleFunc("GET /__emulator/inventory", func(w http.ResponseWriter, r *http.Request) {
		core.WriteJSON(w, http.StatusOK, s.Inventory())
	})
	// What Worker and AppSecrets give in-process tests, for the binary's
	// (engine tests): test-only, secret texts and decrypted values included,
	// as no Cloudflare API returns them.
	s.mux.HandleFunc("GET /__emulator/workers/{account_id}/{script_name}", func(w http.ResponseWriter, r *http.Request) {
		d, ok := s.Worker(r.PathValue("account_id"), r.PathValue("script_name"))
		if !ok {
			core.AdminError(w, http.StatusNotFound, errors.New("no such script"))
			return
		}
		core.WriteJSON(w, http.StatusOK, d)
	})
	s.mux.HandleFunc("GET /__emulator/app-secrets/{account_id}/{script_name}", func(w http.ResponseWriter, r *http.Request) {
		vals, ok := s.AppSecrets(r.PathValue("account_id"), r.PathValue("script_name"))
		if !ok {
			core.AdminError(w, http.StatusNotFound, errors.New("no such control plane"))
			return
		}
		core.WriteJSON(w, http.StatusOK, vals)
	})
	// Object upload for the standalone binary, where PutR2Object is out of
	// reach: the body is the object.
	s.mux.HandleFunc("PUT /__emulator/r2/{account_id}/{bucket_name}/{key...}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
		if err == nil {
			err = s.PutR2Object(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key"), body)
		}
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrNoSuchBucket) {
				status = http.StatusNotFound
			}
			core.AdminError(w, status, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("DELETE /__emulator/r2/{account_id}/{bucket_name}/{key...}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.DeleteR2Object(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key")); err != nil {
			core.AdminError(w, http.StatusNotFound, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
