SELECT id, started_at, finished_at, roots, max_chunk_size, tokenizer, full_rebuild, files_seen,
       files_indexed, files_removed, files_skipped, chunks_written, chunks_total, seconds,
       parse_fallbacks
FROM index_runs ORDER BY id;
