INSERT INTO tags (note_id, tag) VALUES (1, 'seed');
