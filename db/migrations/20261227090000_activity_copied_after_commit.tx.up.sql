-- A tool event reaches the activity feed after its transaction, not inside it: the feed's copy
-- of each event (a row of activity and its entries in four indexes) was about a quarter of a
-- discovery's work (issue 23). The feed holds every event up to the highest event_id it has
-- copied; events only ever get ids above every other's, so those above it are exactly the
-- events not copied yet, and the watermark is the data itself. db.Upkeep copies them once
-- writes pause, and every read of the feed copies what is left first (db/activity.go), so a
-- reader never misses an event that has committed (docs/design.md#rule-3).
DROP TRIGGER tool_events_to_activity;

-- What the feed makes of a tool event, as the trigger made it: voice turns used to be tool
-- events named 'voice_<outcome>'; in the feed a turn is one action, 'voice_turn', with its
-- outcome in its own column. The row's name is the one it has when the event is copied.
CREATE VIEW tool_events_as_activity AS
SELECT e.at AS at, e.actor AS actor,
       CASE WHEN e.action LIKE 'voice\_%' ESCAPE '\' THEN 'voice_turn' ELSE e.action END AS action,
       e.tool_id AS tool_id, COALESCE(t.name, '') AS tool,
       CASE WHEN e.action LIKE 'voice\_%' ESCAPE '\' THEN substr(e.action, 7) ELSE '' END AS outcome,
       e.detail AS detail, e.id AS event_id
FROM tool_events e LEFT JOIN tools t ON t.id = e.tool_id;

-- The trigger took a row's name when the event was appended. A row's name changes only when a
-- proposal renames a local command that is not enabled (app/allowlist/proposal.go); before it
-- does, the events not copied yet are copied under the name they were appended under.
CREATE TRIGGER tools_rename_copies_activity
BEFORE UPDATE OF name ON tools
WHEN old.name IS NOT new.name
BEGIN
    INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail, event_id)
    SELECT at, actor, action, tool_id, tool, outcome, detail, event_id
    FROM tool_events_as_activity
    WHERE event_id > (SELECT COALESCE(max(event_id), 0) FROM activity)
    ORDER BY event_id;
END;

-- An entry written straight into the feed comes after every tool event committed before it, as
-- it did when each event was copied as it was appended: the feed reads in time, then id order,
-- and entries of one time keep the order they committed in. ActivityStore.AppendActivity copies
-- the events first; an approved command line, arriving by this trigger, does so here.
DROP TRIGGER command_approved_to_activity;

CREATE TRIGGER command_approved_to_activity
AFTER UPDATE OF approved_at ON mcp_server_commands
WHEN OLD.approved_at IS NULL AND NEW.approved_at IS NOT NULL
BEGIN
    INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail, event_id)
    SELECT at, actor, action, tool_id, tool, outcome, detail, event_id
    FROM tool_events_as_activity
    WHERE event_id > (SELECT COALESCE(max(event_id), 0) FROM activity)
    ORDER BY event_id;
    INSERT INTO activity (at, actor, action, detail)
    VALUES (NEW.approved_at, COALESCE(NEW.approved_by, 'owner'), 'command_approved',
            json_object('server', NEW.server, 'command', NEW.display, 'digest', NEW.digest));
END;
