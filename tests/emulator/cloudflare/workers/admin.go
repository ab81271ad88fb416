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
	s.adminRead("workers", "no such script", func(acct, script string) (any, bool) { return s.Worker(acct, script) })
	s.adminRead("app-secrets", "no such control plane", func(acct, script string) (any, bool) { return s.AppSecrets(acct, script) })
}

// adminRead mounts GET /__emulator/<what>/{account_id}/{script_name},
// answering read's value or 404 with missing.
func (s *Service) adminRead(what, missing string, read func(acct, script string) (any, bool)) {
	s.mux.HandleFunc("GET /__emulator/"+what+"/{account_id}/{script_name}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := read(r.PathValue("account_id"), r.PathValue("script_name"))
		if !ok {
			core.AdminError(w, http.StatusNotFound, errors.New(missing))
			return
		}
		core.WriteJSON(w, http.StatusOK, v)
	})
}
