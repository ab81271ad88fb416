-- What `wrangler d1 execute --remote --file` uploads through D1 import.
CREATE TABLE imported (id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO imported (name) VALUES ('a');
INSERT INTO imported (name) VALUES ('b;c');
INSERT INTO imported (name) VALUES ('d');
