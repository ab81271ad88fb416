CREATE TABLE tags (note_id INTEGER NOT NULL REFERENCES notes(id), tag TEXT NOT NULL);
CREATE INDEX tags_by_note ON tags (note_id);
