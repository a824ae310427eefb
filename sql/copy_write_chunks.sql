INSERT INTO chunks (id, file_id, first_char, last_char, start_line, end_line, kind, context,
                    text)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);
