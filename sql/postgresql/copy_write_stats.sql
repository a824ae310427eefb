-- FTS5's two numbers for BM25 (N and the total row length), as the copied rows give them.
UPDATE fts_stats SET n_chunks = CAST(:n_chunks AS bigint),
                     total_length = CAST(:total_length AS bigint);
