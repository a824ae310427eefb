-- Chunks that have no vector yet (new, or left over by an interrupted run), with what the
-- vector policy needs to decide whether they want one; texts are fetched per batch.
SELECT c.id, f.kind AS file_kind, c.kind AS chunk_kind, length(c.text) AS n_chars
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.chunk_id = c.id)
ORDER BY c.id;
