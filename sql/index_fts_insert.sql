-- The analysed (identifier-split) text; rowid ties it to chunks.id. Written in batches of
-- many files (ragdb.indexing._FullText): FTS5 then builds a few large segments.
INSERT INTO chunks_fts (rowid, path, context, body)
VALUES (?, ?, ?, ?);
