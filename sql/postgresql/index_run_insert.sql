INSERT INTO index_runs (
    started_at, finished_at, roots, max_chunk_size, tokenizer, full_rebuild, files_seen,
    files_indexed, files_removed, files_skipped, chunks_written, chunks_total, parse_fallbacks,
    seconds
) VALUES (
    :started_at, :finished_at, :roots, :max_chunk_size, :tokenizer, :full_rebuild, :files_seen,
    :files_indexed, :files_removed, :files_skipped, :chunks_written, :chunks_total,
    :parse_fallbacks, :seconds
);
