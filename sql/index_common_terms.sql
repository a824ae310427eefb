-- Refresh the terms too common to help ranking (see migrations/001_core.sql).
DELETE FROM fts_common_terms;
INSERT INTO fts_common_terms (term)
SELECT term FROM chunks_fts_vocab
WHERE doc > (SELECT count(*) FROM chunks) / 2.0;
