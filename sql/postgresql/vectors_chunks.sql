-- One batch of chunks to embed; :ids is a JSON array of chunk ids.
SELECT c.id, f.path, f.kind AS file_kind, c.kind AS chunk_kind, c.context, c.text
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE c.id IN (SELECT CAST(ids.value AS bigint)
               FROM jsonb_array_elements_text(CAST(:ids AS jsonb)) AS ids(value))
ORDER BY c.id;
