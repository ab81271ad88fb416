package upstream

import (
	"slices"
	"strconv"
)

// D1Migrations records facts about upstream's migration files and ledger.
type D1Migrations struct {
	Directory         string   `json:"directory"`
	FilePattern       string   `json:"filePattern"`
	NumberWidth       int      `json:"numberWidth"`
	FileCount         int      `json:"fileCount"`
	First             int      `json:"first"`
	Last              int      `json:"last"`
	Gaps              []int    `json:"gaps"`
	FilesWithTriggers []string `json:"filesWithTriggers"`
	FilesWithPragmas  []string `json:"filesWithPragmas"`
	Applier           string   `json:"applier"`
	Ledger            Ledger   `json:"ledger"`
	Rules             []string `json:"rules"`
}

// Ledger is the migration ledger table.
type Ledger struct {
	Table         string         `json:"table"`
	Columns       []LedgerColumn `json:"columns"`
	VersionFormat string         `json:"versionFormat"`
	NameFormat    string         `json:"nameFormat"`
}

// LedgerColumn is one column of the ledger table. Default is an SQL expression.
type LedgerColumn struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	PrimaryKey bool   `json:"primaryKey"`
	NotNull    bool   `json:"notNull"`
	Default    string `json:"default,omitempty"`
}

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
