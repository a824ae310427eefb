-- N and the total row length of the full-text rows (what FTS5 keeps in its structure
-- record), recomputed at the end of each index run that changed anything, in its transaction.
UPDATE fts_stats
SET n_chunks = (SELECT count(*) FROM chunks),
    total_length = (SELECT coalesce(sum(fts_length), 0) FROM chunks);
