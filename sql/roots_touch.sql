-- A root indexed by this run: added the first time, its last run recorded every time.
INSERT INTO roots (path, added_at, last_indexed_at) VALUES (:path, :now, :now)
ON CONFLICT (path) DO UPDATE SET last_indexed_at = excluded.last_indexed_at;
