-- The analysed context column (enclosing signatures, then the joined names of the definitions
-- a chunk holds) of some chunks, for the callee-first re-order of ragdb/retrieve.py; the port
-- of sql/chunk_contexts.sql. ids: a JSON array of chunk ids.
SELECT chunk_id AS rowid, context
FROM chunks_fts
WHERE chunk_id IN (SELECT CAST(value AS bigint)
                   FROM jsonb_array_elements_text(CAST(:ids AS jsonb)));
