-- Remove a root: its files, their chunks, full-text rows and vectors, and the root itself.
-- Files that another recorded root also holds (a parent folder indexed too) stay.
CREATE TEMP TABLE IF NOT EXISTS removed_files (id INTEGER PRIMARY KEY);
DELETE FROM removed_files;
INSERT INTO removed_files (id)
SELECT f.id FROM files AS f
WHERE (:path = '.' OR f.path = :path OR substr(f.path, 1, length(:path) + 1) = :path || '/')
  AND NOT EXISTS (
      SELECT 1 FROM roots AS o
      WHERE o.path <> :path
        AND (o.path = '.' OR f.path = o.path
             OR substr(f.path, 1, length(o.path) + 1) = o.path || '/'));
DELETE FROM chunks_fts WHERE rowid IN (
    SELECT c.id FROM chunks AS c WHERE c.file_id IN (SELECT id FROM removed_files));
DELETE FROM chunks WHERE file_id IN (SELECT id FROM removed_files);
DELETE FROM files WHERE id IN (SELECT id FROM removed_files);
DELETE FROM chunk_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks);
DELETE FROM roots WHERE path = :path;
SELECT count(*) FROM removed_files;
