-- Fixture schema; the trigger body holds semicolons on purpose.
CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT NOT NULL, touched INTEGER NOT NULL DEFAULT 0);
CREATE TABLE events (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL);
CREATE TRIGGER events_touch AFTER INSERT ON events
BEGIN
  UPDATE sessions SET touched = touched + 1 WHERE id = NEW.session_id;
END;
