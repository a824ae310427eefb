-- What ranking on PostgreSQL needs besides 001_core.sql:
--
--   * chunks_fts: the analysed text of each chunk exactly as rag.db's chunks_fts holds it (the
--     three columns FTS5 indexes). The postings are made from it; `ragdb copy` back to a
--     rag.db rebuilds FTS5 from it (the context column holds names from the syntax tree that
--     the chunk rows alone cannot give back); the pg_textsearch option indexes it.
--   * ragdb_glob_any(path, patterns, tails): SQLite's GLOB (as LIKE, or a regular expression
--     for patterns with a set), so the search files take the same JSON arrays of GLOB
--     patterns (paths, excludes, prior_paths) as sql/search_*.sql and match as SQLite does;
--   * chunks_length: the row lengths BM25 reads, apart from the chunk rows.

-- BM25 reads each matching chunk's row length: from this covering index, not from the wide
-- chunk rows (the lexical leg took 3 times as long reading them).
CREATE INDEX chunks_length ON chunks (id) INCLUDE (fts_length);

CREATE TABLE chunks_fts (
    chunk_id  bigint PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    path      text NOT NULL,            -- the file path, split into words
    context   text NOT NULL,            -- enclosing signatures or headings, defined names
    body      text NOT NULL             -- the chunk text, identifier-split
);

-- One character as itself in a regular expression: ASCII letters and digits as they are,
-- anything else as its code point escape (\U and eight hex digits, valid in and out of sets).
CREATE FUNCTION ragdb_glob_char(ch text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN ch ~ '^[A-Za-z0-9]$' THEN ch
            ELSE '\U' || lpad(to_hex(ascii(ch)), 8, '0') END;

-- The body of a regular expression (no anchors) matching what `GLOB pattern` matches in
-- SQLite (sqlite3 func.c, patternCompare): `*` any run of characters, `?` one character,
-- `[...]` a set (`[^...]` its complement; a `]` first in the set is itself; `a-z` a range by
-- code point, `-` first or last is itself, a reversed range matches nothing), everything
-- else itself, case-sensitive. A set that is never closed makes the pattern match nothing,
-- as in SQLite. Every character that is not an ASCII letter or digit is written as a \U
-- escape, so no character of the pattern is ever a regular-expression operator.
CREATE FUNCTION ragdb_glob_regex(pattern text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
    never CONSTANT text := '$.';       -- matches nothing (an end, then one more character)
    regex text := '';
    n integer := length(pattern);
    i integer := 1;
    j integer;
    ch text;
    low text;
    high text;
    items text;
    invert boolean;
BEGIN
    WHILE i <= n LOOP
        ch := substr(pattern, i, 1);
        IF ch = '*' THEN
            regex := regex || '.*';
            i := i + 1;
        ELSIF ch = '?' THEN
            regex := regex || '.';
            i := i + 1;
        ELSIF ch = '[' THEN
            j := i + 1;
            invert := false;
            items := '';
            low := NULL;                 -- the previous single character, for a range
            IF substr(pattern, j, 1) = '^' THEN
                invert := true;
                j := j + 1;
            END IF;
            IF substr(pattern, j, 1) = ']' THEN
                items := ragdb_glob_char(']');
                j := j + 1;
            END IF;
            LOOP
                IF j > n THEN
                    RETURN never;        -- an unclosed set: SQLite's GLOB matches nothing
                END IF;
                ch := substr(pattern, j, 1);
                EXIT WHEN ch = ']';
                IF ch = '-' AND low IS NOT NULL AND j < n AND substr(pattern, j + 1, 1) <> ']'
                THEN
                    high := substr(pattern, j + 1, 1);
                    IF ascii(low) <= ascii(high) THEN
                        items := items || ragdb_glob_char(low) || '-' || ragdb_glob_char(high);
                    END IF;
                    low := NULL;
                    j := j + 2;
                ELSE
                    items := items || ragdb_glob_char(ch);
                    low := ch;
                    j := j + 1;
                END IF;
            END LOOP;
            i := j + 1;
            IF items <> '' THEN
                regex := regex || '[' || CASE WHEN invert THEN '^' ELSE '' END || items || ']';
            ELSIF invert THEN
                regex := regex || '.';   -- the complement of nothing: any character
            ELSE
                RETURN never;            -- a set of nothing (only reversed ranges)
            END IF;
        ELSE
            regex := regex || ragdb_glob_char(ch);
            i := i + 1;
        END IF;
    END LOOP;
    RETURN regex;
END
$$;

-- A GLOB pattern without a set as a LIKE pattern (NULL for a pattern with one): `*` is `%`,
-- `?` is `_`, and LIKE's own `%`, `_` and `\` are escaped. LIKE is many times faster than a
-- regular expression here, and most patterns have no set.
CREATE FUNCTION ragdb_glob_like(pattern text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN strpos(pattern, '[') > 0 THEN NULL
            ELSE replace(replace(replace(replace(replace(pattern, '\', '\\'), '%', '\%'),
                                         '_', '\_'), '*', '%'), '?', '_') END;

-- The LIKE patterns of a JSON array of GLOB patterns (those without a set), each also as
-- `%/` then the pattern where `tails` (the pattern may match any tail of a path after a '/').
CREATE FUNCTION ragdb_glob_likes(patterns jsonb, tails boolean) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(SELECT pattern
             FROM (SELECT ragdb_glob_like(p) AS pattern
                   FROM jsonb_array_elements_text(patterns) AS p
                   UNION ALL
                   SELECT '%/' || ragdb_glob_like(p)     -- redundant after a leading *
                   FROM jsonb_array_elements_text(patterns) AS p
                   WHERE tails AND left(p, 1) <> '*') AS likes
             WHERE pattern IS NOT NULL);

-- One anchored regular expression for the patterns of the array that have a set (NULL when
-- none has), optionally after any prefix ending in '/' (`tails`).
CREATE FUNCTION ragdb_glob_regexes(patterns jsonb, tails boolean) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT '^' || CASE WHEN tails THEN '(?:.*/)?' ELSE '' END
               || '(?:' || string_agg(ragdb_glob_regex(p), '|') || ')$'
        FROM jsonb_array_elements_text(patterns) AS p
        WHERE ragdb_glob_like(p) IS NULL);

-- Whether `path` GLOBs one of `patterns` (a JSON array), or with `tails` any tail of it after
-- a '/': SQLite's `path GLOB p OR path GLOB '*/' || p` for any p. With the patterns a
-- constant (a search's parameter), the planner computes the LIKE patterns and the regular
-- expression once, as it plans.
CREATE FUNCTION ragdb_glob_any(path text, patterns jsonb, tails boolean) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN path LIKE ANY (ragdb_glob_likes(patterns, tails))
       OR coalesce(path ~ ragdb_glob_regexes(patterns, tails), false);
