-- The text at the start of each definition in :ids (a JSON array), cut from the chunk that
-- holds it: where its signature is read.
SELECT s.id, substr(c.text, s.first_char - c.first_char + 1, 600)
FROM symbol_defs AS s
JOIN chunks AS c ON c.id = s.chunk_id
WHERE s.id IN (SELECT value FROM json_each(:ids));
