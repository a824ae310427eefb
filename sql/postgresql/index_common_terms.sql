-- Refresh the terms too common to help ranking (as sql/index_common_terms.sql, with the
-- document frequencies counted from postings where SQLite reads chunks_fts_vocab). A small
-- index keeps them all.
-- (pgcore's port, for its own end-to-end runs; pgsearch owns the lexical side.)
DELETE FROM fts_common_terms;
INSERT INTO fts_common_terms (term)
SELECT term FROM postings
GROUP BY term
HAVING count(*) > (SELECT count(*) FROM chunks) / 2.0
   AND (SELECT count(*) FROM chunks) >= 64;
