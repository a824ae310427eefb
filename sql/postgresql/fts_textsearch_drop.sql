-- The pg_textsearch option switched off (ragdb legs --lexical postings): its index and the
-- column it indexed go; the postings rank as before.
DROP INDEX IF EXISTS chunks_fts_bm25;
ALTER TABLE chunks_fts DROP COLUMN IF EXISTS doc;
