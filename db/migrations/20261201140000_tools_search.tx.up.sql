-- A trigram index over what the /tools search box looks in (name, scope, cmd, description), so
-- a search reads the rows that match instead of running LIKE on every row. It is an external-
-- content table: the text stays in tools, the triggers keep the index in step.
CREATE VIRTUAL TABLE tools_search USING fts5(
    name, scope, cmd, description,
    content = 'tools', content_rowid = 'id', tokenize = 'trigram'
);

INSERT INTO tools_search (rowid, name, scope, cmd, description)
SELECT id, name, scope, cmd, description FROM tools;

CREATE TRIGGER tools_search_insert AFTER INSERT ON tools
BEGIN
    INSERT INTO tools_search (rowid, name, scope, cmd, description)
    VALUES (new.id, new.name, new.scope, new.cmd, new.description);
END;

-- Rows are written whole, so the column list alone would fire on every state change: only a
-- change of the searched text re-indexes.
CREATE TRIGGER tools_search_update AFTER UPDATE OF name, scope, cmd, description ON tools
WHEN old.name IS NOT new.name OR old.scope IS NOT new.scope OR old.cmd IS NOT new.cmd
    OR old.description IS NOT new.description
BEGIN
    INSERT INTO tools_search (tools_search, rowid, name, scope, cmd, description)
    VALUES ('delete', old.id, old.name, old.scope, old.cmd, old.description);
    INSERT INTO tools_search (rowid, name, scope, cmd, description)
    VALUES (new.id, new.name, new.scope, new.cmd, new.description);
END;
