-- One definition (run with executemany; ids are given by the run: ragdb/symbol_rows.py).
INSERT INTO symbols (id, file_id, chunk_id, parent_id, name, qualified, kind, first_char,
                     last_char, start_line, end_line)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);
