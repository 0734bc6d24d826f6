-- The feed reads by time, then id (db/activity.go): 20261213090100 copied the earlier row events
-- and then the command-line approvals into it, so ids are not the order things happened in an
-- upgraded database. Its filters get indexes in time order; SQLite's index on at alone already
-- holds the rowid, which is the id. Those in id order are left for nothing and go.
DROP INDEX activity_outcome;
DROP INDEX activity_tool;

CREATE INDEX activity_outcome_at ON activity (outcome, at);
CREATE INDEX activity_tool_at ON activity (tool, at);
CREATE INDEX activity_action_at ON activity (action, at);
