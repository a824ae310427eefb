-- Chunks that have no vector yet (new, or left over by an interrupted run), with what the
-- vector policy needs to decide whether they want one; texts are fetched per batch.
-- All windows of a chunk are written in one transaction, so "some vector" means "all".
SELECT c.id, f.path, f.kind AS file_kind, c.kind AS chunk_kind, length(c.text) AS n_chars
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE c.id NOT IN (SELECT chunk_id FROM chunk_vectors)
ORDER BY c.id;
