package workers

import (
	"context"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// cronMatches says whether expr (valid by validateCron) fires at minute t,
// in UTC as Cloudflare runs crons. A day-of-month and a day-of-week that are
// both restricted fire on either, as in every cron.
func cronMatches(expr string, t time.Time) bool {
	t = t.UTC()
	parts := strings.Fields(expr)
	if len(parts) != 5 {
		return false
	}
	values := [5]int{t.Minute(), t.Hour(), t.Day(), int(t.Month()), int(t.Weekday()) + 1}
	for _, f := range []int{0, 1, 3} { // minute, hour, month
		if !cronFieldHas(parts[f], f, values[f]) {
			return false
		}
	}
	dom := cronDayOfMonth(parts[2], t)
	dow := cronDayOfWeek(parts[4], t)
	switch {
	case parts[2] == "*" && parts[4] == "*":
		return true
	case parts[2] == "*":
		return dow
	case parts[4] == "*":
		return dom
	}
	return dom || dow
}

// cronFieldHas evaluates a list field (numbers, names, ranges that may wrap,
// steps) of field index f at v.
func cronFieldHas(field string, f, v int) bool {
	spec := cronFieldSpecs[f]
	span := spec.hi - spec.lo + 1
	for _, item := range strings.Split(field, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			step = cronValue(stepText, 0, nil)
		}
		lo, hi := spec.lo, spec.hi
		if rng != "*" {
			a, b, isRange := strings.Cut(rng, "-")
			lo = cronValue(a, spec.lo, spec.names)
			hi = lo
			if isRange {
				hi = cronValue(b, spec.lo, spec.names)
			} else if hasStep {
				hi = spec.hi
			}
		}
		// Walk from lo to hi, wrapping past the field's top (FRI-MON).
		for k := 0; k < span; k++ {
			x := spec.lo + (lo-spec.lo+k)%span
			if k%step == 0 && x == v {
				return true
			}
			if x == hi {
				break
			}
		}
	}
	return false
}

func cronValue(s string, lo int, names []string) int {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return lo + i
		}
	}
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func lastDayOfMonth(t time.Time) int {
	return time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// nearestWeekday is the weekday of t's month nearest day d (nW), not leaving
// the month.
func nearestWeekday(t time.Time, d int) int {
	last := lastDayOfMonth(t)
	d = min(d, last)
	wd := time.Date(t.Year(), t.Month(), d, 0, 0, 0, 0, time.UTC).Weekday()
	switch {
	case wd == time.Saturday && d == 1:
		return d + 2
	case wd == time.Saturday:
		return d - 1
	case wd == time.Sunday && d == last:
		return d - 2
	case wd == time.Sunday:
		return d + 1
	}
	return d
}

func cronDayOfMonth(field string, t time.Time) bool {
	last := lastDayOfMonth(t)
	switch {
	case field == "L":
		return t.Day() == last
	case field == "LW":
		return t.Day() == nearestWeekday(t, last)
	case strings.HasPrefix(field, "L-"):
		rest := strings.TrimPrefix(field, "L-")
		w := strings.HasSuffix(rest, "W")
		d := last - cronValue(strings.TrimSuffix(rest, "W"), 0, nil)
		if w {
			return t.Day() == nearestWeekday(t, d)
		}
		return t.Day() == d
	case strings.HasSuffix(field, "W"):
		return t.Day() == nearestWeekday(t, cronValue(strings.TrimSuffix(field, "W"), 0, nil))
	}
	return cronFieldHas(field, 2, t.Day())
}

func cronDayOfWeek(field string, t time.Time) bool {
	wd := int(t.Weekday()) + 1
	names := cronFieldSpecs[4].names
	switch {
	case field == "L":
		return wd == 7
	case strings.HasSuffix(field, "L"):
		v := cronValue(strings.TrimSuffix(field, "L"), 1, names)
		return wd == v && t.Day()+7 > lastDayOfMonth(t)
	case strings.Contains(field, "#"):
		a, k, _ := strings.Cut(field, "#")
		return wd == cronValue(a, 1, names) && (t.Day()-1)/7+1 == cronValue(k, 0, nil)
	}
	return cronFieldHas(field, 4, wd)
}

// runCrons fires every deployed script's crons at each minute, until stop.
func (s *Service) runCrons(stop <-chan struct{}) {
	for {
		now := time.Now()
		next := now.Truncate(time.Minute).Add(time.Minute)
		select {
		case <-stop:
			return
		case <-time.After(time.Until(next)):
		}
		type due struct{ acct, script, cron string }
		var fire []due
		s.mu.Lock()
		for _, key := range core.SortedKeys(s.st.Workers) {
			ws := s.st.Workers[key]
			for _, c := range ws.Crons {
				if len(ws.Modules) > 0 && cronMatches(c.Cron, next) {
					fire = append(fire, due{ws.AccountID, ws.Name, c.Cron})
				}
			}
		}
		s.mu.Unlock()
		for _, d := range fire {
			go func() {
				var out map[string]any
				err := s.dispatch(context.Background(), d.acct, d.script, "scheduled", map[string]any{"cron": d.cron, "scheduledTime": next.UnixMilli()}, &out)
				if err != nil && s.logf != nil {
					s.logf("cron %q of %s: %v", d.cron, d.script, err)
				}
			}()
		}
	}
}
