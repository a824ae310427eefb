-- Rebuild cached hits from their ids, in the cached order.
SELECT c.id, f.path, c.first_char, c.last_char, c.start_line, c.end_line, c.kind,
       cached.value ->> '$[1]' AS score, c.text, f.kind AS language
FROM json_each(:hits) AS cached
JOIN chunks AS c ON c.id = cached.value ->> '$[0]'
JOIN files AS f ON f.id = c.file_id
ORDER BY cached.key;
