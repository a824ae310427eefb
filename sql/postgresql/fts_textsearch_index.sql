-- The pg_textsearch option (ragdb copy --lexical pg_textsearch): a BM25 index (Lucene's
-- formula, the english configuration's stems) over one column of each chunk's analysed text,
-- the path twice (rag.db weighs the path column 2) then the context and the body. Needs the
-- extension, which must also be in shared_preload_libraries.
CREATE EXTENSION IF NOT EXISTS pg_textsearch;
ALTER TABLE chunks_fts ADD COLUMN IF NOT EXISTS doc text
    GENERATED ALWAYS AS (path || ' ' || path || ' ' || context || ' ' || body) STORED;
CREATE INDEX IF NOT EXISTS chunks_fts_bm25 ON chunks_fts USING bm25 (doc)
    WITH (text_config = 'english');
