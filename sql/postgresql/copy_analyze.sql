-- After a copy: the planner's statistics of the tables searches read (without them it plans
-- BM25 over the postings as if every table were empty and takes seconds).
ANALYZE files, chunks, chunks_fts, postings, chunk_vectors, fts_stats, fts_common_terms;
