-- ragdb copy, either way: every use of a name, in file and position order.
SELECT file_id, first_char, kind, enclosing_id, name, target_id, alias_id, line
FROM symbol_refs ORDER BY file_id, first_char;
