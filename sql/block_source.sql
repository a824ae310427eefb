-- A source's file as the index knows it, to check a re-read against (files.sha256), and the
-- chunk's enclosing signatures or heading path: what an answer block shows (generate/blocks).
SELECT f.sha256, f.kind, coalesce(c.context, '')
FROM files AS f
LEFT JOIN chunks AS c ON c.file_id = f.id AND c.first_char = :first AND c.last_char = :last
WHERE f.path = :path;
