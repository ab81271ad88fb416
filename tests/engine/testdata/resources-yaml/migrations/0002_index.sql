PRAGMA foreign_keys = ON;
CREATE INDEX events_by_session ON events (session_id);
