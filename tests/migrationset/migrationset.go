// Package migrationset is the 66-file D1 migration set the benchmarks apply,
// shaped like upstream's (terraform/d1/migrations) and written here: files
// 0001-0067 without 0046, each a commented schema step of a kilobyte or
// two (a table, its indexes, a column added to an earlier table, a seed
// row whose text holds a ';'), three with triggers whose bodies hold
// semicolons and one that rebuilds a table under PRAGMA defer_foreign_keys,
// the way a column is dropped in SQLite. The same set is applied by the
// provider's benchmark, by wrangler and by the provider side by side with
// it, so their calls compare.
package migrationset

import (
	"fmt"
	"strings"
)

// Gap is the version upstream's numbering skips.
const Gap = 46

// Last is the highest version.
const Last = 67

// TriggerVersions are the files holding a trigger.
var TriggerVersions = []int{61, 63, 64}

// PragmaVersion is the file that rebuilds a table under a PRAGMA.
const PragmaVersion = 31

// Name is the file name of version v.
func Name(v int) string { return fmt.Sprintf("%04d_step_%d.sql", v, v) }

// Files returns the set, file name to SQL.
func Files() map[string]string {
	files := map[string]string{}
	for v := 1; v <= Last; v++ {
		if v == Gap {
			continue
		}
		files[Name(v)] = file(v)
	}
	return files
}

// previous is the version before v in the set.
func previous(v int) int {
	if v-1 == Gap {
		return v - 2
	}
	return v - 1
}

func file(v int) string {
	prev := previous(v)
	var b strings.Builder
	fmt.Fprintf(&b, "-- Step %d of the benchmark schema (written for this project's benchmarks).\n", v)
	b.WriteString("-- Each step adds a table with its indexes and extends the one before it;\n")
	b.WriteString("-- the seed row's text holds a ';' so that nothing may split on semicolons.\n")
	fmt.Fprintf(&b, `CREATE TABLE t%[1]d (
  id TEXT PRIMARY KEY,
  parent_id TEXT REFERENCES t%[2]d(id),
  title TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'done', 'failed')),
  attempts INTEGER NOT NULL DEFAULT 0,
  payload TEXT,
  created_at INTEGER NOT NULL DEFAULT (unixepoch()),
  updated_at INTEGER NOT NULL DEFAULT (unixepoch())
);
CREATE INDEX t%[1]d_by_parent ON t%[1]d (parent_id);
CREATE INDEX t%[1]d_by_state ON t%[1]d (state, updated_at);
INSERT INTO t%[1]d (id, title, payload) VALUES ('seed-%[1]d', 'step %[1]d; seeded', '{"step": %[1]d}');
`, v, max(prev, 1))
	if v > 1 {
		fmt.Fprintf(&b, "ALTER TABLE t%d ADD COLUMN note_%d TEXT NOT NULL DEFAULT 'added in step %d';\n", prev, v, v)
	}
	if v == PragmaVersion {
		fmt.Fprintf(&b, `-- Drop a column the SQLite way: rebuild the table without it.
PRAGMA defer_foreign_keys = on;
CREATE TABLE t%[1]d_new (id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
INSERT INTO t%[1]d_new (id, title, created_at) SELECT id, title, created_at FROM t%[1]d;
DROP TABLE t%[1]d;
ALTER TABLE t%[1]d_new RENAME TO t%[1]d;
PRAGMA defer_foreign_keys = off;
`, prev)
	}
	for _, t := range TriggerVersions {
		if t == v {
			fmt.Fprintf(&b, `CREATE TRIGGER t%[1]d_touch AFTER UPDATE OF state ON t%[1]d
BEGIN
  UPDATE t%[1]d SET updated_at = unixepoch(), attempts = attempts + 1 WHERE id = NEW.id;
  INSERT INTO t%[2]d (id, title) VALUES ('from-trigger-' || NEW.id, 'touched; by a trigger');
END;
`, v, prev)
		}
	}
	return b.String()
}
