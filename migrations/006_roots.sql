-- The folders and files indexed into this rag.db: several repositories can share one index.
-- path is stored as `ragdb index` stores file paths (relative to where it ran; "." is that
-- folder). A root's files are those whose path lies under it; their counts are computed by
-- SQL (sql/roots_list.sql), never stored.
CREATE TABLE roots (
    path             TEXT PRIMARY KEY,
    added_at         TEXT NOT NULL,         -- ISO 8601, UTC
    last_indexed_at  TEXT NOT NULL,
    options          TEXT NOT NULL DEFAULT '{}'  -- JSON: include, ignore, hidden of its last run
);

-- Indexes made before this table: their roots are the ones their runs recorded (walked with
-- today's defaults from now on).
INSERT OR IGNORE INTO roots (path, added_at, last_indexed_at)
SELECT root.value, min(r.started_at), max(r.started_at)
FROM index_runs AS r, json_each(r.roots) AS root
GROUP BY root.value;
