-- The indexed roots with their files and chunks, counted from the rows themselves: a file
-- belongs to a root when its path lies under the root's path ("." holds everything).
WITH owned AS MATERIALIZED (
    SELECT r.path AS root, f.id AS file_id
    FROM roots AS r
    JOIN files AS f
      ON r.path = '.' OR f.path = r.path
         OR substr(f.path, 1, length(r.path) + 1) = r.path || '/'
)
SELECT r.path, r.added_at, r.last_indexed_at, r.options,
       (SELECT count(*) FROM owned WHERE owned.root = r.path) AS files,
       (SELECT count(*) FROM owned JOIN chunks AS c ON c.file_id = owned.file_id
        WHERE owned.root = r.path) AS chunks
FROM roots AS r
ORDER BY r.path;
