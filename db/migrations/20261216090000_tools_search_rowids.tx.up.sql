-- The search index keeps which rows hold each three-character run, not where (detail=none).
-- Positions made it answer a substring as a phrase by itself, but they were most of what every
-- discovery wrote to it: a query now takes the rows holding all of its runs from the index, and
-- the function contains_folded keeps those that hold the query itself (db/search.go). The
-- triggers of 20261201140000 write to the new table as they did to the old.
DROP TABLE tools_search;

CREATE VIRTUAL TABLE tools_search USING fts5(
    name, scope, cmd, description,
    content = 'tools', content_rowid = 'id', tokenize = 'trigram', detail = none
);

INSERT INTO tools_search (tools_search) VALUES ('rebuild');

-- The index is merged when writes pause (db.Upkeep), not inside the write that adds a segment,
-- where a discovery of many servers spent a sixth of its time merging. A level that reaches 128
-- segments is still merged by the writer that adds the 128th (FTS5's crisis merge), which bounds
-- what a search looks in should writes never pause. The upkeep's 'merge' commands merge a level
-- of 4 segments or more (usermerge, FTS5's default).
INSERT INTO tools_search (tools_search, rank) VALUES ('automerge', 0);
INSERT INTO tools_search (tools_search, rank) VALUES ('crisismerge', 128);
