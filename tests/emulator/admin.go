package emulator

import (
	"errors"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
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
}
