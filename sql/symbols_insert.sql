-- One definition (run with executemany; ids are given by the run: ragdb/symbol_rows.py), its
-- qualified name and kind by id.
INSERT INTO symbol_defs (id, file_id, chunk_id, parent_id, qualified_id, kind, first_char,
                         last_char, start_line, end_line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
