-- title: Last index runs
-- description: The 20 most recent index runs, newest first: what they indexed and how long it took.
SELECT id,
       started_at,
       finished_at,
       roots,
       files_seen,
       files_indexed,
       files_removed,
       files_skipped,
       chunks_written,
       chunks_total,
       full_rebuild,
       max_chunk_size,
       tokenizer,
       round(seconds, 2) AS seconds
FROM index_runs
ORDER BY id DESC
LIMIT 20
