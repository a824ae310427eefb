-- ragdb copy, either way: every qualified name definitions have and references resolve to, by
-- id.
SELECT id, qualified FROM symbol_names ORDER BY id;
