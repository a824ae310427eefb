-- The analysed context column (enclosing signatures, then the joined names of the definitions
-- a chunk holds) of some chunks, for the callee-first re-order of ragdb/retrieve.py.
-- :ids is a JSON array of chunk ids.
SELECT rowid, context
FROM chunks_fts
WHERE rowid IN (SELECT value FROM json_each(:ids));
