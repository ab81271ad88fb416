package upstream

import (
	"slices"
	"strconv"
)

func (v *validator) migrations() {
	m := v.c.D1Migrations
	if m.First < 1 || m.Last < m.First {
		v.add("d1Migrations: first %d / last %d are not a range", m.First, m.Last)
		return
	}
	gaps := map[int]bool{}
	prev := m.First
	for _, g := range m.Gaps {
		if g <= prev || g >= m.Last {
			v.add("d1Migrations.gaps: %d is out of order or outside (%d, %d)", g, m.First, m.Last)
		}
		gaps[g] = true
		prev = g
	}
	if want := m.Last - m.First + 1 - len(m.Gaps); want != m.FileCount {
		v.add("d1Migrations.fileCount %d does not match %d..%d minus %d gap(s) = %d", m.FileCount, m.First, m.Last, len(m.Gaps), want)
	}
	for _, f := range slices.Concat(m.FilesWithTriggers, m.FilesWithPragmas) {
		match := migrationFileRE.FindStringSubmatch(f)
		if match == nil || len(match[1]) != m.NumberWidth {
			v.add("d1Migrations: file %q does not match %s", f, m.FilePattern)
			continue
		}
		n, _ := strconv.Atoi(match[1])
		if n < m.First || n > m.Last || gaps[n] {
			v.add("d1Migrations: file %q has a number outside the recorded files", f)
		}
	}
	l := m.Ledger
	if l.Table == "" {
		v.add("d1Migrations.ledger.table is required")
	}
	pk := 0
	cols := map[string]bool{}
	for _, col := range l.Columns {
		if col.Name == "" || cols[col.Name] {
			v.add("d1Migrations.ledger: empty or duplicate column %q", col.Name)
		}
		cols[col.Name] = true
		if col.PrimaryKey {
			pk++
		}
	}
	if pk != 1 {
		v.add("d1Migrations.ledger: %d primary-key columns, want 1", pk)
	}
}
