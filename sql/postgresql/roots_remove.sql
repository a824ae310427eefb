-- Remove a root: its files, their chunks, postings and vectors, and the root itself (as
-- sql/roots_remove.sql); then N and the total row length BM25 reads.
-- Files that another recorded root also holds (a parent folder indexed too) stay. Which
-- root holds which file: the rule of sql/roots_list.sql (whole components, substr).
CREATE TEMP TABLE IF NOT EXISTS removed_files (id bigint PRIMARY KEY);
DELETE FROM removed_files;
WITH held AS MATERIALIZED (
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
INSERT INTO removed_files (id)
SELECT file_id FROM held
WHERE root = :path
  AND file_id NOT IN (SELECT file_id FROM held WHERE root <> :path);
DELETE FROM postings WHERE chunk_id IN (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM removed_files));
DELETE FROM chunks WHERE file_id IN (SELECT id FROM removed_files);
DELETE FROM files WHERE id IN (SELECT id FROM removed_files);
DELETE FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks);
DELETE FROM roots WHERE path = :path;
UPDATE fts_stats
SET n_chunks = (SELECT count(*) FROM chunks),
    total_length = (SELECT coalesce(sum(fts_length), 0) FROM chunks);
SELECT count(*) FROM removed_files;
