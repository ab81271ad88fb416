package core

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Cloudflare's global API rate limit: 1200 requests per five minutes per
// user or token (https://developers.cloudflare.com/fundamentals/api/reference/limits/).
// Past it the API answers 429 with code 971 and Retry-After until the window
// moves on.
const (
	CloudflareRateLimitRequests = 1200
	CloudflareRateLimitWindow   = 5 * time.Minute
)

// RateLimit, when enforced (SetRateLimit, or POST /__emulator/ratelimit),
// allows each bearer token Requests Cloudflare v4 calls in any sliding
// Window; the call over it is answered as Cloudflare answers it. Off by
// default: tests that count calls must not meet it by accident.
type RateLimit struct {
	Requests int           `json:"requests"`
	Window   time.Duration `json:"-"`
}

// rateLimiter keeps each token's call times inside the current window.
type rateLimiter struct {
	mu     sync.Mutex
	limit  RateLimit
	calls  map[string][]time.Time
	now    func() time.Time
	denied int
}

// SetRateLimit enforces l from now on (a zero Requests turns it off) and
// forgets the calls made so far.
func (s *Core) SetRateLimit(l RateLimit) error {
	if l.Requests < 0 || l.Requests > 0 && l.Window <= 0 {
		return fmt.Errorf("a rate limit needs requests >= 0 and a positive window, got %d per %s", l.Requests, l.Window)
	}
	s.limiter.mu.Lock()
	defer s.limiter.mu.Unlock()
	s.limiter.limit, s.limiter.calls, s.limiter.denied = l, map[string][]time.Time{}, 0
	if s.limiter.now == nil {
		s.limiter.now = time.Now
	}
	return nil
}

// RateLimited is how many calls the enforced limit refused.
func (s *Core) RateLimited() int {
	s.limiter.mu.Lock()
	defer s.limiter.mu.Unlock()
	return s.limiter.denied
}

// admitRate records a call of token and reports how long to wait when it
// is over the limit (0: admitted).
func (s *Core) admitRate(token string) time.Duration {
	l := &s.limiter
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit.Requests == 0 {
		return 0
	}
	now := l.now()
	recent := l.calls[token]
	cut := 0
	for cut < len(recent) && now.Sub(recent[cut]) >= l.limit.Window {
		cut++
	}
	recent = recent[cut:]
	if len(recent) >= l.limit.Requests {
		l.calls[token] = recent
		l.denied++
		return recent[0].Add(l.limit.Window).Sub(now)
	}
	l.calls[token] = append(recent, now)
	return 0
}

// writeRateLimited answers as Cloudflare does past its limit.
func writeRateLimited(w http.ResponseWriter, wait time.Duration) {
	setRetryAfter(w, wait)
	WriteError(w, errRateLimited())
}

// errRateLimited is Cloudflare's error past its rate limit (an injected
// rate_limit fault answers with it too).
func errRateLimited() error {
	return NewAPIError(http.StatusTooManyRequests, 971, "Please wait and consider throttling your request speed")
}

// setRetryAfter advertises wait in whole seconds, rounded up.
func setRetryAfter(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
}
