-- Definitions and references in less space (issue 41's bar: rag.db at most 1.30x the index
-- without them). The same facts as 008_symbols.sql made, stored smaller:
--   * kinds are small integers (symbol_kinds: the text of each, the same ids as
--     ragdb.symbols.KIND_IDS), not words repeated on 240,000 uses;
--   * a definition names its qualified name by id (symbol_defs.qualified_id), as a use does:
--     the names are stored once, in symbol_names, and a definition's name (its last part) is
--     read from its qualified name;
--   * a name's last part is an expression index over its qualified name, not a column;
--   * a use's name is NULL where it is its target's last part (most are: `f` of `pkg.f`).
-- The views `symbols` and `symbol_uses` give them back as text for ad hoc SQL, with the
-- columns 008 had. The rows are derived data: the tables are made again empty and every file's
-- symbols are read again on the next `ragdb index` (files.symbols_version = 0), its chunks
-- untouched.
DROP VIEW symbol_uses;
DROP TABLE symbol_refs;
DROP TABLE symbols;
DROP TABLE symbol_names;

-- What a definition or a use is, by id (ragdb.symbols.KIND_IDS; a new kind is a new row).
CREATE TABLE symbol_kinds (
    id    INTEGER PRIMARY KEY,
    name  TEXT NOT NULL UNIQUE
);
INSERT INTO symbol_kinds (id, name) VALUES
    (1, 'function'), (2, 'method'), (3, 'class'), (4, 'struct'), (5, 'interface'),
    (6, 'trait'), (7, 'type'), (8, 'enum'), (9, 'constant'), (10, 'variable'), (11, 'macro'),
    (12, 'module'), (13, 'field'), (14, 'test'), (15, 'call'), (16, 'import'),
    (17, 'attribute'), (18, 'inherit'), (19, 'decorator'), (20, 'use');

-- The qualified names definitions have and uses resolve to, each stored once (the same few
-- thousand names recur in a hundred thousand uses), looked up by their last part (`b` of
-- `pkg.a.b`: the text after the last dot), an expression of the name itself. A statement that
-- looks a name up by its last part writes this expression as it stands here.
CREATE TABLE symbol_names (
    id         INTEGER PRIMARY KEY,
    qualified  TEXT NOT NULL                 -- one row per name (the index run keeps it so)
);
CREATE INDEX symbol_names_last ON symbol_names(
    substr(qualified, length(rtrim(qualified, replace(qualified, '.', ''))) + 1));

-- symbol_defs: every definition, with its qualified name (dot-separated in every language:
-- module or package, enclosing types and functions, name), its kind (function, method, class,
-- struct, interface, trait, type, enum, constant, variable, macro, module, field, test), its
-- character range and lines (start_line: the line of its name), the enclosing definition and
-- the chunk that holds its first character (its signature is read from that chunk's text).
-- A definition is found by its name through symbol_names_last, then symbol_defs_qualified.
CREATE TABLE symbol_defs (
    id            INTEGER PRIMARY KEY,
    file_id       INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_id      INTEGER,                   -- the chunk holding its first line (same file)
    parent_id     INTEGER,                   -- the enclosing definition (same file); NULL: none
    qualified_id  INTEGER NOT NULL,          -- symbol_names.id
    kind          INTEGER NOT NULL,          -- symbol_kinds.id
    first_char    INTEGER NOT NULL,          -- inclusive
    last_char     INTEGER NOT NULL,          -- exclusive
    start_line    INTEGER NOT NULL,
    end_line      INTEGER NOT NULL
);
CREATE INDEX symbol_defs_qualified ON symbol_defs(qualified_id);
CREATE INDEX symbol_defs_file ON symbol_defs(file_id, first_char);

-- symbol_refs: every use of a name (kind: call, import, type, attribute, inherit, decorator,
-- macro, use) with its place and the definition enclosing it. `target_id` names the qualified
-- name it resolves to as far as its own file tells (NULL when it cannot: a method of an object
-- of unknown type; such a use keeps its name); whether a definition of that name exists,
-- directly or through imports that re-export it (`alias_id`: the qualified name a module-level
-- import binds, module.name), is decided when it is read, so a file's rows never depend on
-- another file's. A use is stored by its place (file, character: one use starts there), in
-- file order: a file's uses are one range of the table, found and removed without an index
-- of their own.
CREATE TABLE symbol_refs (
    file_id       INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    first_char    INTEGER NOT NULL,          -- the name as written starts here (its end:
                                             -- first_char + length of the name)
    kind          INTEGER NOT NULL,          -- symbol_kinds.id
    enclosing_id  INTEGER,                   -- the innermost definition holding it (same file)
    name          TEXT,                      -- the name as written (its last part); NULL: the
                                             -- last part of its target (read with coalesce)
    target_id     INTEGER,                   -- symbol_names.id
    alias_id      INTEGER,                   -- imports only: symbol_names.id
    line          INTEGER NOT NULL,
    PRIMARY KEY (file_id, first_char)
) WITHOUT ROWID;
CREATE INDEX symbol_refs_target ON symbol_refs(target_id) WHERE target_id IS NOT NULL;
CREATE INDEX symbol_refs_unresolved ON symbol_refs(name) WHERE target_id IS NULL;
CREATE INDEX symbol_refs_alias ON symbol_refs(alias_id) WHERE alias_id IS NOT NULL;

-- Definitions with their name, qualified name and kind as text (the columns of 008's table),
-- for ad hoc SQL: `SELECT * FROM symbols WHERE name = 'LLM'` looks the name up by its index.
CREATE VIEW symbols AS
SELECT d.id, d.file_id, d.chunk_id, d.parent_id,
       substr(n.qualified, length(rtrim(n.qualified, replace(n.qualified, '.', ''))) + 1)
           AS name,
       n.qualified, k.name AS kind, d.first_char, d.last_char, d.start_line, d.end_line
FROM symbol_defs AS d
JOIN symbol_names AS n ON n.id = d.qualified_id
JOIN symbol_kinds AS k ON k.id = d.kind;

-- Uses with their name, kind, target and alias as text, for ad hoc SQL.
CREATE VIEW symbol_uses AS
SELECT r.file_id, r.enclosing_id,
       coalesce(r.name, substr(t.qualified,
                               length(rtrim(t.qualified, replace(t.qualified, '.', ''))) + 1))
           AS name,
       t.qualified AS target, a.qualified AS alias, k.name AS kind, r.first_char,
       r.first_char + length(coalesce(r.name, substr(t.qualified,
           length(rtrim(t.qualified, replace(t.qualified, '.', ''))) + 1))) AS last_char,
       r.line
FROM symbol_refs AS r
JOIN symbol_kinds AS k ON k.id = r.kind
LEFT JOIN symbol_names AS t ON t.id = r.target_id
LEFT JOIN symbol_names AS a ON a.id = r.alias_id;

-- Every file's symbols are read again by the next index run (ragdb.symbols.SYMBOLS_VERSION).
UPDATE files SET symbols_version = 0;
