-- The path of one file, for the file_id cell of a chunk's page in Datasette.
SELECT path FROM files WHERE id = :file_id
