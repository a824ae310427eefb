-- The chunks of one file that overlap a character range, to rebuild a cited span's text.
SELECT c.id, c.first_char, c.last_char, c.start_line, c.kind, c.text
FROM chunks AS c
JOIN files AS f ON f.id = c.file_id
WHERE f.path = CAST(:path AS text)
  AND c.last_char > CAST(:first AS integer)
  AND c.first_char < CAST(:last AS integer)
ORDER BY c.first_char;
