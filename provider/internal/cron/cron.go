package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The rule is Cloudflare's, from "Supported cron expressions" in
// https://developers.cloudflare.com/workers/configuration/cron-triggers/
// (five fields, "along with most Quartz scheduler-like cron syntax
// extensions"):
//
//	Minute         0-59                                   * , - /
//	Hours          0-23                                   * , - /
//	Days of Month  1-31                                   * , - / L W
//	Months         1-12 or JAN-DEC (case-insensitive)     * , - /
//	Weekdays       1-7 or SUN-SAT (case-insensitive)      * , - / L #
//
// Weekdays count from 1 = Sunday (the page's "0 17 * * sun or 0 17 * * 1"),
// so 0 is not a weekday. Where the table is silent, the details follow the
// parser Cloudflare publishes as the one behind Cron Triggers
// (github.com/cloudflare/saffron, src/parse.rs), which is Quartz's reading:
//   - a step runs from 1 to the field's span (minute 59, hour 23, day of
//     month 30, month 11, weekday 6); "n/s" steps from n;
//   - a range may wrap around (22-2 in hours, FRI-MON in weekdays);
//   - day of month takes L (last day), LW (last weekday), L-n and L-nW (n
//     days before the last, 1-30) and nW (the weekday nearest day n); day of
//     week takes L alone (Saturday), nL (the last weekday n of the month) and
//     n#k (the k-th weekday n, k 1-5). Each of these is the whole field,
//     never a list item, and L, W are upper case (names are not);
//   - '*' is the whole field or the start of a step ("*/5", which may be
//     listed); '?' is not supported.
//
// The emulator (tests/emulator/cron.go) implements the same rule
// independently; tests/crontable holds the expressions both are tested on.

// field is one of the five fields with its values and the names allowed in
// place of numbers.
type field struct {
	name   string
	lo, hi int
	names  []string // names[i] stands for lo+i
}

const (
	minute = iota
	hour
	dayOfMonth
	month
	dayOfWeek
)

var fields = [...]field{
	minute:     {name: "minute", lo: 0, hi: 59},
	hour:       {name: "hour", lo: 0, hi: 23},
	dayOfMonth: {name: "day of month", lo: 1, hi: 31},
	month:      {name: "month", lo: 1, hi: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	dayOfWeek:  {name: "day of week", lo: 1, hi: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// Validate checks a five-field Cloudflare cron trigger expression. The error
// names the expression and the field at fault.
func Validate(expr string) error {
	parts := strings.Fields(expr)
	if len(parts) != len(fields) {
		return fmt.Errorf("cron %q must have 5 fields (minute hour day-of-month month day-of-week), has %d", expr, len(parts))
	}
	for i, part := range parts {
		if err := fields[i].check(i, part); err != nil {
			return fmt.Errorf("cron %q: %v in the %s field", expr, err, fields[i].name)
		}
	}
	return nil
}

// check validates one field: a form that stands alone, '*', or a list.
func (f field) check(i int, part string) error {
	switch i {
	case dayOfMonth:
		if done, err := f.lastOrNearest(part); done {
			return err
		}
	case dayOfWeek:
		if done, err := f.lastOrNth(part); done {
			return err
		}
	}
	if part == "*" {
		return nil
	}
	for item := range strings.SplitSeq(part, ",") {
		if err := f.item(item); err != nil {
			return err
		}
	}
	return nil
}

// lastOrNearest reads day of month's L, LW, L-n, L-nW and nW; done is false
// when part is none of them.
func (f field) lastOrNearest(part string) (done bool, err error) {
	if !strings.ContainsAny(part, "LW") {
		return false, nil
	}
	if strings.Contains(part, ",") {
		return true, fmt.Errorf("%q: L and W stand alone, not in a list", part)
	}
	if rest, ok := strings.CutPrefix(part, "L"); ok {
		rest, _ = strings.CutSuffix(rest, "W")
		if rest == "" {
			return true, nil // L, LW
		}
		offset, ok := strings.CutPrefix(rest, "-")
		if n, err := number(offset); !ok || err != nil || n < 1 || n > 30 {
			return true, fmt.Errorf("%q: after L comes W, -n or -nW with n from 1 to 30", part)
		}
		return true, nil
	}
	day, ok := strings.CutSuffix(part, "W")
	if !ok {
		return true, fmt.Errorf("%q: W follows a single day (15W) or L (LW)", part)
	}
	if _, err := f.value(day); err != nil {
		return true, fmt.Errorf("%q: W follows a single day (15W) or L (LW): %v", part, err)
	}
	return true, nil
}

// lastOrNth reads day of week's L, nL and n#k; done is false when part is
// none of them.
func (f field) lastOrNth(part string) (done bool, err error) {
	day, k, nth := strings.Cut(part, "#")
	if !nth {
		var last bool
		if day, last = strings.CutSuffix(part, "L"); !last {
			return false, nil
		}
		if day == "" {
			return true, nil // L: Saturday
		}
	}
	if strings.Contains(part, ",") {
		return true, fmt.Errorf("%q: L and # stand alone, not in a list", part)
	}
	if _, err := f.value(day); err != nil {
		return true, err
	}
	if nth {
		if n, err := number(k); err != nil || n < 1 || n > 5 {
			return true, fmt.Errorf("%q: the occurrence after # must be 1-5", part)
		}
	}
	return true, nil
}

// item checks one list item: a value or a range, optionally with a step, or
// "*/step".
func (f field) item(item string) error {
	if item == "" {
		return errors.New("empty list item")
	}
	base, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		if n, err := number(step); err != nil || n < 1 || n > f.hi-f.lo {
			return fmt.Errorf("%q: the step must be a number from 1 to %d", item, f.hi-f.lo)
		}
	}
	if base == "*" {
		if !hasStep {
			return errors.New("* stands alone or starts a step (*/5), not a list item")
		}
		return nil
	}
	from, to, isRange := strings.Cut(base, "-")
	if _, err := f.value(from); err != nil {
		return err
	}
	if isRange {
		// A range may wrap around the end of the field (Quartz's rule).
		if _, err := f.value(to); err != nil {
			return err
		}
	}
	return nil
}

// value reads a number in the field's range or one of its names.
func (f field) value(s string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(s, n) {
			return f.lo + i, nil
		}
	}
	v, err := number(s)
	if err != nil || v < f.lo || v > f.hi {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%q is not a value from %d to %d or %s-%s", s, f.lo, f.hi, f.names[0], f.names[len(f.names)-1])
		}
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, f.lo, f.hi)
	}
	return v, nil
}

// number reads unsigned decimal digits (strconv.Atoi would take "+5").
func number(s string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return strconv.Atoi(s)
}
