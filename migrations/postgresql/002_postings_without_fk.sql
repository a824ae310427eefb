-- Postings without a foreign key to chunks. A full index of vLLM writes 1.7 million postings
-- rows, and checking each against chunks doubled the time of that COPY (21.9 s against 11.0
-- measured on a loaded 2-core host). Postings are written and deleted only with their chunks,
-- by ragdb's own statements in the same transaction (sql/postgresql/index_file_delete.sql,
-- index_clear.sql, roots_remove.sql), as FTS5's rows in rag.db, which have no key either.
ALTER TABLE postings DROP CONSTRAINT IF EXISTS postings_chunk_id_fkey;
