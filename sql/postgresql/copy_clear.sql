-- ragdb copy --replace: everything an index holds, in the copy's transaction (the old index
-- stays for every reader until the copy commits).
TRUNCATE files, chunks, chunks_fts, postings, chunk_vectors, settings, roots, index_runs,
         fts_common_terms, query_cache, symbol_defs, symbol_refs, symbol_names;
UPDATE fts_stats SET n_chunks = 0, total_length = 0;
