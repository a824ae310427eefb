-- One use of a name (run with executemany; as sql/symbol_refs_insert.sql).
INSERT INTO symbol_refs (file_id, enclosing_id, name, target_id, alias_id, kind, first_char,
                         line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);
