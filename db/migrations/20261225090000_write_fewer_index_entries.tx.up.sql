-- A discovery writes a row, an event and a feed entry for every tool, and an entry in every index
-- of their tables: two indexes that serve nothing, or almost nothing, of what a discovery
-- writes go or shrink (issue 23).
--
-- Nothing lists rows by state alone any more: the /tools page groups them by server
-- (tools_scope_state_rank_name). A list by state is sorted instead.
DROP INDEX tools_state_rank_name;

-- Only voice turns have an outcome, and only they are filtered by it: the index holds them alone
-- (db/activity.go asks for outcome != '' beside the outcome, so that SQLite uses it).
DROP INDEX activity_outcome_at;
CREATE INDEX activity_outcome_at ON activity (outcome, at) WHERE outcome != '';
