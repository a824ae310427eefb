-- The chunks' text of a file about to lose its rows: did it hold a secret (indexing.py)?
SELECT text FROM chunks WHERE file_id = :file_id ORDER BY first_char;
