-- Vectors whose chunk is gone (deleted by something that did not remove its vector).
DELETE FROM chunk_vectors
WHERE chunk_id IN (
    SELECT v.chunk_id FROM chunk_vectors AS v
    WHERE NOT EXISTS (SELECT 1 FROM chunks AS c WHERE c.id = v.chunk_id)
);
