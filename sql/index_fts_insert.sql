-- The analysed (identifier-split) text; rowid ties it to chunks.id.
INSERT INTO chunks_fts (rowid, path, context, body)
VALUES (:chunk_id, :path, :context, :body);
