-- A file's definitions and references, before they are read again (symbols_version).
DELETE FROM symbol_refs WHERE file_id = :file_id;
DELETE FROM symbol_defs WHERE file_id = :file_id;
