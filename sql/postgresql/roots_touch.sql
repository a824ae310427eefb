-- A root indexed by this run: added the first time, its last run (and the walk options it
-- used, so that a re-index of every root walks each one the same way) recorded every time.
INSERT INTO roots (path, added_at, last_indexed_at, options) VALUES (:path, :now, :now, :options)
ON CONFLICT (path) DO UPDATE SET last_indexed_at = excluded.last_indexed_at,
                                 options = excluded.options;
