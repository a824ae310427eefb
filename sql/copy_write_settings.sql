INSERT INTO settings (key, value) VALUES (?, ?);
