-- One batch of chunks to embed; :ids is a JSON array of chunk ids.
SELECT c.id, f.path, f.kind AS file_kind, c.kind AS chunk_kind, c.context, c.text
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE c.id IN (SELECT value FROM json_each(:ids))
ORDER BY c.id;
