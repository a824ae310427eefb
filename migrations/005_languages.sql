-- Any codebase: files.kind holds the file's language (python, markdown, rst, text, go, rust,
-- typescript, cpp, cuda, yaml, ...; see ragdb/syntax_chunking.py), and `language` names it so
-- for ad hoc SQL: SELECT language, count(*) FROM files GROUP BY language.
ALTER TABLE files ADD COLUMN language TEXT GENERATED ALWAYS AS (kind) VIRTUAL;

-- Source files whose syntax tree was mostly errors and were cut as text instead.
ALTER TABLE index_runs ADD COLUMN parse_fallbacks INTEGER NOT NULL DEFAULT 0;
