package r2

import (
	"errors"
	"io"
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// registerAdmin mounts R2's /__emulator/ routes.
func (s *Service) registerAdmin() {
	// Object upload for the standalone binary, where PutObject is out of
	// reach: the body is the object.
	s.mux.HandleFunc("PUT /__emulator/r2/{account_id}/{bucket_name}/{key...}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, core.MaxBody))
		if err == nil {
			err = s.PutObject(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key"), body)
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
		if err := s.DeleteObject(r.PathValue("account_id"), r.PathValue("bucket_name"), r.PathValue("key")); err != nil {
			core.AdminError(w, http.StatusNotFound, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
