-- The definitions an answer may show for a name the question writes (ragdb/generate/named.py;
-- tokenize.written_names): the functions, methods, classes and types whose name (the last
-- part of the qualified name) is :name, each with the chunk holding its first line (the
-- answer's source for it) and the line of its name; at most :limit, in path order; with the
-- count of the definitions of any kind bearing the name (total: a name defined more than
-- SearchParams.symbol_max times points at no one definition, as the symbol leg says). Only
-- in files under :project (a stored path prefix; '' for any): where the index holds several
-- projects (sql/search_projects.sql), another repository's `merge()` is not this one's. And
-- only in files the search's filters allow (:filtered = 1: :paths, :excludes and :langs as in
-- sql/search_lexical.sql): `--exclude 'vendor/*'` keeps a vendored definition out of the answer
-- as out of the sources. PostgreSQL's version: the filters through ragdb_allowed_files
-- (migrations/postgresql/011_allowed_files.sql), the rest as sql/block_named.sql.
SELECT f.path, f.kind, c.first_char, c.last_char, c.start_line, c.end_line, c.text,
       s.start_line, (SELECT count(*) FROM symbols AS o WHERE o.name = :name) AS total
FROM symbols AS s
JOIN files AS f ON f.id = s.file_id
JOIN chunks AS c ON c.id = s.chunk_id
WHERE s.name = :name
  AND s.kind IN ('function', 'method', 'class', 'struct', 'interface', 'trait', 'type', 'enum')
  AND (:project = '' OR substr(f.path, 1, length(:project) + 1) = :project || '/')
  AND (CAST(:filtered AS integer) = 0 OR f.id IN (
          SELECT a.id FROM ragdb_allowed_files(CAST(:langs AS jsonb), CAST(:paths AS jsonb),
                                               CAST(:excludes AS jsonb)) AS a))
ORDER BY f.path, s.first_char, s.id
LIMIT :limit;
