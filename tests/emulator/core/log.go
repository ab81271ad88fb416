package core

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"time"
)

// WithLog wraps h with the optional request log logf (nil: none). Only method, path, status
// and duration are logged: headers carry tokens and bodies carry user data.
func WithLog(logf func(format string, args ...any), h http.Handler) http.Handler {
	if logf == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if rec := recover(); rec != nil {
				logf("%s %s -> aborted (%s)", r.Method, r.URL.EscapedPath(), time.Since(start).Round(time.Microsecond))
				panic(rec)
			}
		}()
		h.ServeHTTP(sw, r)
		status := fmt.Sprint(sw.status)
		if sw.hijacked {
			status = "dropped"
		} else if sw.status == 0 && r.Context().Err() != nil {
			status = "client gone" // e.g. a held request whose client was killed
		} else if sw.status == 0 {
			status = "200"
		}
		logf("%s %s -> %s (%s)", r.Method, r.URL.EscapedPath(), status, time.Since(start).Round(time.Microsecond))
	})
}

// statusWriter records the status for the log. Unwrap keeps
// http.ResponseController (used to hijack for dropped connections) working.
type statusWriter struct {
	http.ResponseWriter
	status   int
	hijacked bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack exists so the log can tell a deliberately dropped connection from a
// response; http.ResponseController prefers it over Unwrap.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}
