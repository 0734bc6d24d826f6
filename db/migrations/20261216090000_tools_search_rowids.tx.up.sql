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

-- As 20261215090100 set it on the table this replaces.
INSERT INTO tools_search (tools_search, rank) VALUES ('automerge', 16);
