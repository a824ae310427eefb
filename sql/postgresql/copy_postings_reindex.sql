-- The keys and index of postings exactly as migrations/postgresql/001_core.sql and
-- 002_postings_without_fk.sql (no key to chunks) make them
-- (tests/test_postgres_search.py compares the two), built once over the loaded rows.
SELECT set_config('maintenance_work_mem', '256MB', true);
ALTER TABLE postings ADD CONSTRAINT postings_pkey
    PRIMARY KEY (term, chunk_id) INCLUDE (tf_path, tf_context, tf_body);
CREATE INDEX postings_chunk ON postings(chunk_id);
