-- A file's chunks with what their vectors are made of besides the file's path: the file's
-- kind, the chunk's kind, context and text. Read before an edited file's rows are replaced
-- and after: a chunk that is the same keeps its vectors (ragdb.vectors.VectorReuse).
SELECT c.id, f.kind AS file_kind, c.kind AS chunk_kind, c.context, c.text
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE f.path = :path
ORDER BY c.id;
