-- The qualified names of every definition named :name.
SELECT qualified FROM symbols WHERE name = :name;
