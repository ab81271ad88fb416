package emulator

import (
	"fmt"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

// The fault engine lives in core; these names keep the package's API.

// FaultKind selects what an injected Fault does (core.FaultKind).
type FaultKind = core.FaultKind

// Fault makes matching requests misbehave (core.Fault).
type Fault = core.Fault

// HoldStats describes FaultHold's requests (core.HoldStats).
type HoldStats = core.HoldStats

// The fault kinds every family understands; see core for each one's effect.
const (
	FaultLatency        = core.FaultLatency
	FaultRateLimit      = core.FaultRateLimit
	FaultServerError    = core.FaultServerError
	FaultDropConnection = core.FaultDropConnection
	FaultHold           = core.FaultHold
	FaultHoldResponse   = core.FaultHoldResponse
)

// InjectFault adds f; faults apply in the order injected. An invalid fault is
// a bug in the calling test, so it panics rather than being ignored.
func (s *Server) InjectFault(f Fault) { s.core.InjectFault(f) }

// ClearFaults removes every fault and releases every held request.
func (s *Server) ClearFaults() { s.core.ClearFaults() }

// Holds reports the held requests.
func (s *Server) Holds() HoldStats { return s.core.Holds() }

// ReleaseHolds lets every request held now proceed; the hold faults stay.
func (s *Server) ReleaseHolds() { s.core.ReleaseHolds() }

// Counts returns how many requests each route received, keyed by the
// registered pattern, plus "UNMATCHED" for requests no route matched.
func (s *Server) Counts() map[string]int { return s.core.Counts() }

// CloudflareCalls is the number of requests made to /client/v4/, matched or
// not.
func (s *Server) CloudflareCalls() int { return s.core.CloudflareCalls() }

// ResetCounts zeroes Counts and CloudflareCalls.
func (s *Server) ResetCounts() { s.core.ResetCounts() }

// CloudflareBytes is the response-body bytes Cloudflare routes sent since
// the last ResetCounts (core.CloudflareBytes).
func (s *Server) CloudflareBytes() int64 { return s.core.CloudflareBytes() }

// checkFaultRoute is core's route check: a fault names a route of one of the
// families served here.
func checkFaultRoute(f Fault) (Fault, error) {
	if f.Route != "" && !core.IsCloudflarePath(f.Route) && !strings.HasPrefix(f.Route, workers.PathPrefix) &&
		!strings.HasPrefix(f.Route, daytona.Prefix) && !strings.HasPrefix(f.Route, e2b.Prefix) && !strings.HasPrefix(f.Route, opencomputer.Prefix) &&
		!strings.HasPrefix(f.Route, vercel.Prefix) && !strings.HasPrefix(f.Route, github.Prefix+"/") && !strings.HasPrefix(f.Route, anthropic.Prefix+"/") && !modal.IsFaultRoute(f.Route) {
		return f, fmt.Errorf("route must start with /client/v4/, /__workers/, /daytona/, /e2b/, /opencomputer/, /vercel/, /github/, /anthropic/ or /modal.client.ModalClient/, or be %s: %q", modal.WebRoute, f.Route)
	}
	return modal.CheckFault(f)
}

// RateLimit is Cloudflare's per-token limit as the emulator enforces it
// (core.RateLimit).
type RateLimit = core.RateLimit

// SetRateLimit enforces l on the Cloudflare routes from now on (core.SetRateLimit).
func (s *Server) SetRateLimit(l RateLimit) error { return s.core.SetRateLimit(l) }

// RateLimited is how many calls the enforced limit refused.
func (s *Server) RateLimited() int { return s.core.RateLimited() }
