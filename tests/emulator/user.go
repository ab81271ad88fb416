package emulator

import "net/http"

func (s *Server) registerUser() {
	s.api("GET /client/v4/user/tokens/verify", authVerify, s.verifyToken)
}

// verifyToken answers like the real endpoint, including its informational
// message; the id is derived from the token so it is stable but reveals
// nothing.
func (s *Server) verifyToken(w http.ResponseWriter, r *http.Request) {
	tok, _, _ := bearer(r)
	writeEnvelope(w, http.StatusOK,
		map[string]any{"id": tokenID(tok), "status": "active"}, nil,
		[]any{map[string]any{"code": 10000, "message": "This API Token is valid and active", "type": nil}})
}
