-- Every indexed file: its hash says whether it changed, symbols_version whether its
-- definitions must be read again (ragdb.symbols.SYMBOLS_VERSION).
SELECT id, path, sha256, symbols_version FROM files;
