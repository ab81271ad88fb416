package emulator

import (
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// registerAdmin mounts the admin routes that read or write Cloudflare state
// (inventory, R2 objects) next to core's (health, counts, faults).
func (s *Server) registerAdmin() {
	s.mux.HandleFunc("GET /__emulator/inventory", func(w http.ResponseWriter, r *http.Request) {
		core.WriteJSON(w, http.StatusOK, s.Inventory())
	})
}
