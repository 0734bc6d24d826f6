-- The /tools page lists proposed rows first, then enabled, disabled and withdrawn, each by name,
-- fifty at a time. This index holds that order, so a page is read instead of sorted. The
-- expression must stay identical to stateRank in db/tools.go for SQLite to use it.
CREATE INDEX tools_state_rank_name ON tools (
    (CASE state WHEN 'proposed' THEN 0 WHEN 'enabled' THEN 1 WHEN 'disabled' THEN 2 ELSE 3 END),
    name
);
