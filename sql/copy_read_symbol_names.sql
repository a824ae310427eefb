-- ragdb copy, either way: every qualified name symbols and references resolve to, by id.
SELECT id, qualified, last FROM symbol_names ORDER BY id;
