package cron

import (
	"fmt"
	"strconv"
	"strings"
)

// cronFields are the five fields Cloudflare cron triggers take, with their
// ranges and the names allowed in place of numbers.
var cronFields = []struct {
	name   string
	lo, hi int
	names  []string // names[i] stands for lo+i
}{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day of month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	// Cloudflare numbers weekdays 1-7 with 1 = Sunday.
	{name: "day of week", lo: 1, hi: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// Validate checks a five-field cron expression: *, numbers, names,
// lists, ranges and steps.
func Validate(expr string) error {
	parts := strings.Fields(expr)
	if len(parts) != len(cronFields) {
		return fmt.Errorf("cron %q must have 5 fields (minute hour day-of-month month day-of-week), has %d", expr, len(parts))
	}
	for i, part := range parts {
		f := cronFields[i]
		for _, item := range strings.Split(part, ",") {
			base, step, hasStep := strings.Cut(item, "/")
			if hasStep {
				if n, err := strconv.Atoi(step); err != nil || n < 1 {
					return fmt.Errorf("cron %q: bad step %q in the %s field", expr, step, f.name)
				}
			}
			if base == "*" {
				continue
			}
			from, to, isRange := strings.Cut(base, "-")
			lo, err := cronValue(from, f.lo, f.hi, f.names)
			if err != nil {
				return fmt.Errorf("cron %q: %v in the %s field", expr, err, f.name)
			}
			if isRange {
				hi, err := cronValue(to, f.lo, f.hi, f.names)
				if err != nil {
					return fmt.Errorf("cron %q: %v in the %s field", expr, err, f.name)
				}
				if hi < lo {
					return fmt.Errorf("cron %q: range %s runs backwards in the %s field", expr, base, f.name)
				}
			}
		}
	}
	return nil
}

func cronValue(s string, lo, hi int, names []string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return lo + i, nil
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
	}
	return v, nil
}
