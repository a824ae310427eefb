-- The version of the extraction that made a file's symbols.
UPDATE files SET symbols_version = :version WHERE id = :file_id;
