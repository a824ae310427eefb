-- make bench-scale: copy number :n of the index in rag.db, written into the same rag.db (a
-- synthetic larger corpus: the same files under copy<n>/..., so postings and vectors grow
-- as with more code, with no re-embedding). Ids are offset by :n times :file_offset and
-- :chunk_offset (past the largest id); each copy's full-text path gains its folder's term.
-- (The vectors are copied by benchmarks/bench_scale.py: vec0 cannot insert from a select of
-- itself.)
-- Files keep their sha256: copies share a result slot with the original, as identical
-- files do (sql/search_hybrid.sql), so rankings stay comparable with the 1x index.
INSERT INTO files (id, path, sha256, size, kind, n_chars, indexed_at)
SELECT id + :n * :file_offset, 'copy' || :n || '/' || path, sha256, size, kind, n_chars,
       indexed_at
FROM files WHERE id < :file_offset;

INSERT INTO chunks (id, file_id, first_char, last_char, start_line, end_line, kind, context,
                    text)
SELECT id + :n * :chunk_offset, file_id + :n * :file_offset, first_char, last_char,
       start_line, end_line, kind, context, text
FROM chunks WHERE id < :chunk_offset;

INSERT INTO chunks_fts (rowid, path, context, body)
SELECT rowid + :n * :chunk_offset, 'copy' || :n || ' ' || path, context, body
FROM chunks_fts WHERE rowid < :chunk_offset;
