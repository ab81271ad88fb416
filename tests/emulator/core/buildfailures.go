package core

import (
	"net/http"
	"sync"
)

// BuildFailures are the image builds a test (or a script driving the
// standalone emulator) arranges to fail, for one sandbox family: the next
// builds of any name, queued one per build, or every build of one name until
// cleared. They live in memory only; a restart forgets them. Safe for
// concurrent use.
type BuildFailures struct {
	defaultReason string

	mu    sync.Mutex
	next  []string
	named map[string]string
}

// NewBuildFailures returns an empty plan whose empty reasons read as
// defaultReason.
func NewBuildFailures(defaultReason string) *BuildFailures {
	return &BuildFailures{defaultReason: defaultReason, named: map[string]string{}}
}

func (b *BuildFailures) reason(r string) string {
	if r == "" {
		return b.defaultReason
	}
	return r
}

// FailNext makes the next build (of any name) fail with reason; calls queue
// up.
func (b *BuildFailures) FailNext(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next = append(b.next, b.reason(reason))
}

// FailNamed makes every build of name fail with reason until Clear.
func (b *BuildFailures) FailNamed(name, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.named[name] = b.reason(reason)
}

// Clear forgets every arranged failure.
func (b *BuildFailures) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next, b.named = nil, map[string]string{}
}

// Take is the reason the build of name must fail for, or "": a failure
// arranged for its name (which stays), else the next queued one (consumed).
func (b *BuildFailures) Take(name string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.named[name]; ok {
		return r
	}
	if len(b.next) > 0 {
		r := b.next[0]
		b.next = b.next[1:]
		return r
	}
	return ""
}

// Register adds the admin routes under base (for example
// /__emulator/e2b): POST base/build-failures {name?, reason?} arranges a
// failure (named, or the next build's), DELETE clears them. Plain JSON, no
// key, never counted.
func (b *BuildFailures) Register(mux *http.ServeMux, base string) {
	mux.HandleFunc("POST "+base+"/build-failures", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name   string `json:"name"`
			Reason string `json:"reason"`
		}
		if err := AdminDecode(w, r, &body); err != nil {
			AdminError(w, http.StatusBadRequest, err)
			return
		}
		if body.Name == "" {
			b.FailNext(body.Reason)
		} else {
			b.FailNamed(body.Name, body.Reason)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE "+base+"/build-failures", func(w http.ResponseWriter, _ *http.Request) {
		b.Clear()
		w.WriteHeader(http.StatusNoContent)
	})
}
