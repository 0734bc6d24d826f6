-- The search index is written one segment per transaction, and every discovery of a server is a
-- transaction. FTS5 merged the segments of a level as soon as 4 had accumulated, so a discovery
-- of many servers spent a sixth of its time merging the same rows again and again; merging at
-- 16 halves the merge levels a row goes through. A search looks in at most a few more segments
-- (FTS5's crisis merge still bounds them), which measured no slower.
INSERT INTO tools_search (tools_search, rank) VALUES ('automerge', 16);
