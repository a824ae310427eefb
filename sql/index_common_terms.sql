-- Refresh the terms too common to help ranking (see migrations/001_core.sql). A small index
-- keeps them all: with a handful of chunks every word of a one-file corpus is "common", and
-- dropping them would leave nothing to search for.
DELETE FROM fts_common_terms;
INSERT INTO fts_common_terms (term)
SELECT term FROM chunks_fts_vocab
WHERE doc > (SELECT count(*) FROM chunks) / 2.0
  AND (SELECT count(*) FROM chunks) >= 64;
