SELECT key, value FROM settings ORDER BY key;
