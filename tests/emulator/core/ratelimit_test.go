package core

import (
	"testing"
	"time"
)

// The window slides per token: a token over its limit waits until its
// oldest call leaves the window, and another token is unaffected.
func TestRateLimitSlidingWindowPerToken(t *testing.T) {
	s := New()
	if err := s.SetRateLimit(RateLimit{Requests: 3, Window: time.Minute}); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s.limiter.now = func() time.Time { return clock }
	for i := range 3 {
		if wait := s.admitRate("a"); wait != 0 {
			t.Fatalf("call %d refused (wait %s)", i+1, wait)
		}
		clock = clock.Add(10 * time.Second)
	}
	if wait := s.admitRate("a"); wait != 30*time.Second {
		t.Fatalf("the fourth call in a minute waits until the first leaves the window: want 30s, got %s", wait)
	}
	if wait := s.admitRate("b"); wait != 0 {
		t.Fatalf("another token has its own window, got wait %s", wait)
	}
	clock = clock.Add(30 * time.Second)
	if wait := s.admitRate("a"); wait != 0 {
		t.Fatalf("admitted once the first call left the window, got wait %s", wait)
	}
	if got := s.RateLimited(); got != 1 {
		t.Fatalf("refused calls: want 1, got %d", got)
	}
	if err := s.SetRateLimit(RateLimit{Requests: 5}); err == nil {
		t.Fatal("a limit without a window is refused")
	}
}
