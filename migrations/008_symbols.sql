-- Definitions and references (ragdb/symbols.py): what `ragdb definition`, `references`,
-- `callers`, `callees`, `outline` and `map` read. Written by the index run in the same
-- transaction as the file's chunks, removed with the file.
--
-- symbols: every definition, with its qualified name (dot-separated in every language:
-- module or package, enclosing types and functions, name), its kind (function, method, class,
-- struct, interface, trait, type, enum, constant, variable, macro, module, field, test), its
-- character range and lines (start_line: the line of its name), the enclosing symbol and the
-- chunk that holds its first character (its signature is read from that chunk's text).
CREATE TABLE symbols (
    id          INTEGER PRIMARY KEY,
    file_id     INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    chunk_id    INTEGER,                     -- the chunk holding its first line (same file)
    parent_id   INTEGER,                     -- the enclosing symbol (same file); NULL: none
    name        TEXT NOT NULL,
    qualified   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    first_char  INTEGER NOT NULL,            -- inclusive
    last_char   INTEGER NOT NULL,            -- exclusive
    start_line  INTEGER NOT NULL,
    end_line    INTEGER NOT NULL
);
-- A qualified name is looked up by its last part (name) first: no index of its own.
CREATE INDEX symbols_name ON symbols(name);
CREATE INDEX symbols_file ON symbols(file_id, first_char);

-- The qualified names uses resolve to, each stored once (a use names its target by id: the
-- same few thousand names recur in a hundred thousand uses); looked up by their last part.
CREATE TABLE symbol_names (
    id         INTEGER PRIMARY KEY,
    qualified  TEXT NOT NULL,                -- one row per name (the index run keeps it so)
    last       TEXT NOT NULL                 -- its last part: `b` of `pkg.a.b`
);
CREATE INDEX symbol_names_last ON symbol_names(last);

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
                                             -- first_char + length(name))
    kind          TEXT NOT NULL,
    enclosing_id  INTEGER,                   -- the innermost symbol holding it (same file)
    name          TEXT NOT NULL,             -- the name as written (its last part)
    target_id     INTEGER,                   -- symbol_names.id
    alias_id      INTEGER,                   -- imports only: symbol_names.id
    line          INTEGER NOT NULL,
    PRIMARY KEY (file_id, first_char)
) WITHOUT ROWID;
CREATE INDEX symbol_refs_target ON symbol_refs(target_id) WHERE target_id IS NOT NULL;
CREATE INDEX symbol_refs_unresolved ON symbol_refs(name) WHERE target_id IS NULL;
CREATE INDEX symbol_refs_alias ON symbol_refs(alias_id) WHERE alias_id IS NOT NULL;

-- Uses with their target and alias as text, for ad hoc SQL.
CREATE VIEW symbol_uses AS
SELECT r.file_id, r.enclosing_id, r.name, t.qualified AS target, a.qualified AS alias,
       r.kind, r.first_char, r.first_char + length(r.name) AS last_char, r.line
FROM symbol_refs AS r
LEFT JOIN symbol_names AS t ON t.id = r.target_id
LEFT JOIN symbol_names AS a ON a.id = r.alias_id;

-- The version of the extraction that made a file's symbols (ragdb.symbols.SYMBOLS_VERSION;
-- 0: none yet). An index made before these tables, or by another version, gets its symbols on
-- the next `ragdb index` of each file, without its chunks being cut again.
ALTER TABLE files ADD COLUMN symbols_version INTEGER NOT NULL DEFAULT 0;
