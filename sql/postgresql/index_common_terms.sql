-- Refresh the terms too common to help ranking (sql/index_common_terms.sql): the stems in
-- more than half of all chunks, counted from the postings as FTS5's vocabulary table counts
-- them (one posting per chunk and term). A small index keeps them all: with a handful of
-- chunks every word of a one-file corpus is "common", and dropping them would leave nothing.
DELETE FROM fts_common_terms;
INSERT INTO fts_common_terms (term)
SELECT p.term
FROM postings AS p
CROSS JOIN (SELECT count(*) AS n FROM chunks) AS total
WHERE total.n >= 64
GROUP BY p.term, total.n
HAVING count(*) > total.n / 2.0;
