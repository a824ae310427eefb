-- Each chunk's FTS5 row length (tokens of path, context and body together), for BM25's
-- length normalisation. :ids and :lengths are two arrays of the same length.
UPDATE chunks AS c
SET fts_length = u.length
FROM unnest(CAST(:ids AS bigint[]), CAST(:lengths AS integer[])) AS u(id, length)
WHERE c.id = u.id;
