-- A new row reaches the search index in the upkeep (db.Upkeep), once writes pause, not in the
-- transaction that inserts it: the index's trigram tokens were a sixth of a discovery's CPU
-- (issue 23). tools_search_through holds the id up to which every row is in the index; rows
-- are only ever added, each with an id above every other's, so those above it are exactly the
-- rows not yet indexed, and a search reads them as well as the index's candidates
-- (db/search.go). A row already indexed is still re-indexed by the update trigger, in the
-- same transaction as its change; one not yet indexed goes in as it is when its turn comes.
CREATE TABLE tools_search_through (
    only INTEGER PRIMARY KEY CHECK (only = 1),
    id   INTEGER NOT NULL
);
INSERT INTO tools_search_through (only, id) SELECT 1, COALESCE(max(id), 0) FROM tools;

DROP TRIGGER tools_search_insert;
DROP TRIGGER tools_search_update;

CREATE TRIGGER tools_search_update AFTER UPDATE OF name, scope, cmd, description ON tools
WHEN (old.name IS NOT new.name OR old.scope IS NOT new.scope OR old.cmd IS NOT new.cmd
    OR old.description IS NOT new.description)
    AND old.id <= (SELECT id FROM tools_search_through)
BEGIN
    INSERT INTO tools_search (tools_search, rowid, name, scope, cmd, description)
    VALUES ('delete', old.id, old.name, old.scope, old.cmd, old.description);
    INSERT INTO tools_search (rowid, name, scope, cmd, description)
    VALUES (new.id, new.name, new.scope, new.cmd, new.description);
END;
