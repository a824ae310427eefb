-- The analysed text of a batch of chunks (path, context, body: exactly what rag.db's
-- chunks_fts takes), written by COPY beside their postings: `ragdb copy` back to a rag.db
-- rebuilds FTS5 from it and the pg_textsearch option indexes it
-- (migrations/postgresql/010_search.sql). Deleted with its chunk (ON DELETE CASCADE).
COPY chunks_fts (chunk_id, path, context, body) FROM STDIN;
