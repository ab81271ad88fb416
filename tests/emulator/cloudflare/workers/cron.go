package workers

import (
	"fmt"
	"strings"
)

// Cron trigger syntax, as Cloudflare documents it ("Supported cron
// expressions", https://developers.cloudflare.com/workers/configuration/cron-triggers/)
// and as its published parser reads it (github.com/cloudflare/saffron):
// five fields; minute 0-59, hour 0-23, day of month 1-31, month 1-12 or
// JAN-DEC, weekday 1-7 (1 = Sunday) or SUN-SAT, names in any case; '*', lists,
// ranges (which may wrap around) and steps (1 to the field's span) in every
// field; L, LW, L-n, L-nW and nW as a whole day-of-month field; L, nL and n#k
// (k 1-5) as a whole weekday field.
//
// This is the emulator's own reading, written apart from the provider's
// (provider/internal/cron), which it must not import; both are tested on
// tests/crontable.

// cronScanner walks one field left to right.
type cronScanner struct {
	s      string
	pos    int
	lo, hi int
	names  []string // names[i] stands for lo+i
}

var cronFieldSpecs = [5]struct {
	name   string
	lo, hi int
	names  []string
}{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, strings.Fields("JAN FEB MAR APR MAY JUN JUL AUG SEP OCT NOV DEC")},
	{"day of week", 1, 7, strings.Fields("SUN MON TUE WED THU FRI SAT")},
}

// validateCron reports why expr is not a Cloudflare cron expression.
func validateCron(expr string) error {
	parts := strings.Fields(expr)
	if len(parts) != 5 {
		return fmt.Errorf("want 5 space-separated fields (minute hour day-of-month month day-of-week), got %d", len(parts))
	}
	for i, part := range parts {
		spec := cronFieldSpecs[i]
		sc := &cronScanner{s: part, lo: spec.lo, hi: spec.hi, names: spec.names}
		var ok bool
		switch i {
		case 2:
			ok = sc.dayOfMonthSpecial() || sc.list()
		case 4:
			ok = sc.dayOfWeekSpecial() || sc.list()
		default:
			ok = sc.list()
		}
		if !ok {
			return fmt.Errorf("%s field %q is not valid", spec.name, part)
		}
	}
	return nil
}

func (c *cronScanner) done() bool { return c.pos == len(c.s) }

func (c *cronScanner) eat(ch byte) bool {
	if c.pos < len(c.s) && c.s[c.pos] == ch {
		c.pos++
		return true
	}
	return false
}

// digits reads a run of ASCII digits; ok is false when there are none.
func (c *cronScanner) digits() (n int, ok bool) {
	start := c.pos
	for c.pos < len(c.s) && c.s[c.pos] >= '0' && c.s[c.pos] <= '9' {
		if n < 1000 {
			n = n*10 + int(c.s[c.pos]-'0')
		}
		c.pos++
	}
	return n, c.pos > start
}

// number reads a digit run within [lo, hi].
func (c *cronScanner) number(lo, hi int) bool {
	n, ok := c.digits()
	return ok && n >= lo && n <= hi
}

// value reads one value of the field: a number or a three-letter name.
func (c *cronScanner) value() bool {
	rest := c.s[c.pos:]
	for _, n := range c.names {
		if len(rest) >= 3 && strings.EqualFold(rest[:3], n) {
			c.pos += 3
			return true
		}
	}
	return c.number(c.lo, c.hi)
}

// step reads "/s", s from 1 to the field's span, when present.
func (c *cronScanner) step() bool {
	if !c.eat('/') {
		return true
	}
	return c.number(1, c.hi-c.lo)
}

// list reads '*' alone, or comma-separated items: "*/s", "v", "v/s", "v-v"
// or "v-v/s".
func (c *cronScanner) list() bool {
	c.pos = 0
	if c.s == "*" {
		return true
	}
	for {
		if c.eat('*') {
			if c.pos >= len(c.s) || c.s[c.pos] != '/' {
				return false
			}
		} else {
			if !c.value() {
				return false
			}
			if c.eat('-') && !c.value() {
				return false
			}
		}
		if !c.step() {
			return false
		}
		if c.done() {
			return true
		}
		if !c.eat(',') || c.done() {
			return false
		}
	}
}

// dayOfMonthSpecial reads L, LW, L-n, L-nW (n 1-30) or nW as the whole field.
func (c *cronScanner) dayOfMonthSpecial() bool {
	c.pos = 0
	if c.eat('L') {
		if c.eat('-') && !c.number(1, 30) {
			return false
		}
		c.eat('W')
		return c.done()
	}
	return c.number(c.lo, c.hi) && c.eat('W') && c.done()
}

// dayOfWeekSpecial reads L (Saturday), vL or v#k (k 1-5) as the whole field.
func (c *cronScanner) dayOfWeekSpecial() bool {
	c.pos = 0
	if c.s == "L" {
		return true
	}
	if !c.value() {
		return false
	}
	if c.eat('L') {
		return c.done()
	}
	return c.eat('#') && c.number(1, 5) && c.done()
}
