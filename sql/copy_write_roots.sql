INSERT INTO roots (path, added_at, last_indexed_at, options) VALUES (?, ?, ?, ?);
