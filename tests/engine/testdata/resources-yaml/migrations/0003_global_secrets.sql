-- The installation-wide secrets the control plane hands every sandbox: one
-- row per upper-cased key, the value sealed with AES-GCM (see the fixture
-- control plane's header for the exact encoding), times in unix milliseconds.
CREATE TABLE IF NOT EXISTS global_secrets (
  key TEXT PRIMARY KEY NOT NULL,
  encrypted_value TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
