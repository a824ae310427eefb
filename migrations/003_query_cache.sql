-- Answers to repeated searches. A row is valid only for the index generation it was computed
-- on (settings 'generation', bumped by every index run that changes something), so an index
-- run never needs to find and invalidate stale rows one by one: it just clears the table.
CREATE TABLE query_cache (
    key         TEXT PRIMARY KEY,   -- sha256 of (normalised query, k, mode, ranking parameters)
    generation  INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    hits        TEXT NOT NULL       -- JSON: [[chunk_id, score], ...] best first
) WITHOUT ROWID;
