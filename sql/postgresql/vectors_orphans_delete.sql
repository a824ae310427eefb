-- Vectors whose chunk is gone. One scan of the vector table, whatever the number of orphans.
DELETE FROM chunk_vectors
WHERE chunk_id NOT IN (SELECT id FROM chunks);
