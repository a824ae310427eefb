-- A file's chunks, for the definitions read again without re-chunking it (symbols.chunk_id).
SELECT id, first_char, last_char FROM chunks WHERE file_id = :file_id ORDER BY first_char;
