package workers

import (
	"testing"
	"time"
)

func TestCronMatches(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr, at string
		want     bool
	}{
		{"* * * * *", "2026-12-02 03:04", true},
		{"*/5 * * * *", "2026-12-02 03:05", true},
		{"*/5 * * * *", "2026-12-02 03:06", false},
		{"10-20/5 * * * *", "2026-12-02 03:15", true},
		{"10-20/5 * * * *", "2026-12-02 03:25", false},
		{"0 3 * * *", "2026-12-02 03:00", true},
		{"0 3 * DEC *", "2026-12-02 03:00", true},
		{"0 3 * JAN-NOV *", "2026-12-02 03:00", false},
		{"0 0 * * WED", "2026-12-02 00:00", true}, // 2026-12-02 is a Wednesday (4)
		{"0 0 * * 4", "2026-12-02 00:00", true},
		{"0 0 * * FRI-MON", "2026-12-06 00:00", true}, // Sunday, inside the wrapped range
		{"0 0 * * FRI-MON", "2026-12-02 00:00", false},
		{"0 0 L * *", "2026-12-31 00:00", true},
		{"0 0 L * *", "2026-12-30 00:00", false},
		{"0 0 L-1 * *", "2026-12-30 00:00", true},
		{"0 0 1W * *", "2026-11-02 00:00", true}, // 1 Nov 2026 is a Sunday: Monday the 2nd
		{"0 0 * * 4#1", "2026-12-02 00:00", true},
		{"0 0 * * 4#2", "2026-12-02 00:00", false},
		{"0 0 * * 5L", "2026-12-31 00:00", true}, // the last Thursday
		{"0 0 15 * MON", "2026-12-15 00:00", true},
		{"0 0 15 * MON", "2026-12-07 00:00", true}, // either restricted day field fires
		{"0 0 15 * MON", "2026-12-08 00:00", false},
	}
	for _, c := range cases {
		if err := validateCron(c.expr); err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := cronMatches(c.expr, at(c.at)); got != c.want {
			t.Errorf("cronMatches(%q, %s) = %v, want %v", c.expr, c.at, got, c.want)
		}
	}
}
