-- Is there a vector whose chunk is gone? (A no-op index run checks this before loading a model.)
SELECT 1 FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks) LIMIT 1;
