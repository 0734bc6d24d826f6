-- The /tools page groups rows by server: by scope, then proposed, enabled, disabled and
-- withdrawn, each by name, fifty at a time. This index holds that order, as
-- tools_state_rank_name holds the order by state. The expression must stay identical to
-- stateRank in db/tools.go for SQLite to use it.
CREATE INDEX tools_scope_state_rank_name ON tools (
    scope,
    (CASE state WHEN 'proposed' THEN 0 WHEN 'enabled' THEN 1 WHEN 'disabled' THEN 2 ELSE 3 END),
    name
);
