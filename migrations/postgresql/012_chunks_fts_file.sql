-- chunks_fts.file_id: each analysed row's file, so that the pg_textsearch leg
-- (sql/postgresql/search_textsearch_hits.sql) filters by one array of allowed file ids
-- (sql/postgresql/search_allowed_files.sql), which its index scan checks row by row, hashed,
-- instead of a subquery: pg_textsearch scores every returned row a second time in a query
-- with a subquery, and the subquery built the set of allowed chunk ids for every search
-- (at 10x the vLLM corpus, 81-290 ms for --path, --lang or --exclude alone).
-- Set by a trigger from the chunk row, which is always written first (the foreign key), so
-- the writers of chunks_fts (an index run's COPY, ragdb copy) stay as they are.
ALTER TABLE chunks_fts ADD COLUMN file_id bigint;
UPDATE chunks_fts AS t SET file_id = c.file_id FROM chunks AS c WHERE c.id = t.chunk_id;

CREATE FUNCTION ragdb_chunks_fts_file() RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.file_id := (SELECT c.file_id FROM chunks AS c WHERE c.id = NEW.chunk_id);
    RETURN NEW;
END
$$;

CREATE TRIGGER chunks_fts_file BEFORE INSERT ON chunks_fts
FOR EACH ROW EXECUTE FUNCTION ragdb_chunks_fts_file();
