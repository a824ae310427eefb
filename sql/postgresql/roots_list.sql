-- The indexed roots with their files and chunks, counted from the rows themselves: a file
-- belongs to a root when its path lies under the root's path, on whole components ("docs"
-- holds "docs/a.md", never "docs.md"; "docs/a.md" never holds "docs/a.md.txt"). "." holds
-- what lies inside the current folder, not "../other/x"; a root of ".." only ("..",
-- "../..": the current folder lies inside it) holds what is not further out. Prefixes are
-- compared with substr, never LIKE or GLOB, so "%", "_", "*", "?" and "[" in a path are
-- plain characters. The same rule as indexing.holds and sql/roots_remove.sql.
WITH owned AS MATERIALIZED (
    SELECT r.path AS root, f.id AS file_id
    FROM roots AS r
    JOIN files AS f
      ON CASE
             WHEN r.path = '.' THEN substr(f.path, 1, 3) <> '../'
             WHEN replace(r.path || '/', '../', '') = ''
                 THEN substr(f.path, 1, length(r.path) + 4) <> r.path || '/../'
             ELSE f.path = r.path
                  OR substr(f.path, 1, length(r.path) + 1) = r.path || '/'
         END
)
SELECT r.path, r.added_at, r.last_indexed_at, r.options,
       (SELECT count(*) FROM owned WHERE owned.root = r.path) AS files,
       (SELECT count(*) FROM owned JOIN chunks AS c ON c.file_id = owned.file_id
        WHERE owned.root = r.path) AS chunks
FROM roots AS r
ORDER BY r.path;
