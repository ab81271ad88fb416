package workers

import (
	"errors"
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// registerAdmin mounts what Worker and AppSecrets give in-process tests,
// for the binary's (engine tests): test-only, secret texts and decrypted
// values included, as no Cloudflare API returns them.
func (s *Service) registerAdmin() {
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
