-- The owner's activity feed (`maven events`, /activity): one append-only table in one id
-- order, so a page of it is one indexed query. A row's changes keep living in tool_events
-- (rule 3); a trigger copies each into the feed as it is appended, in the same transaction,
-- so no code path can add a tool event the feed misses. Voice turns (with the row they
-- involved, if any), locks and servers' states are written here directly, and the approval of
-- a stdio command line arrives by a trigger on mcp_server_commands.
CREATE TABLE activity (
    id       INTEGER PRIMARY KEY,
    at       TEXT    NOT NULL,
    actor    TEXT    NOT NULL,
    action   TEXT    NOT NULL,
    tool_id  INTEGER REFERENCES tools (id),
    tool     TEXT    NOT NULL DEFAULT '', -- the row's name when the event happened
    outcome  TEXT    NOT NULL DEFAULT '', -- a voice turn's outcome; '' for other events
    detail   TEXT    NOT NULL DEFAULT '{}',
    event_id INTEGER UNIQUE REFERENCES tool_events (id)
);

CREATE INDEX activity_at ON activity (at);
CREATE INDEX activity_outcome ON activity (outcome, id);
CREATE INDEX activity_tool ON activity (tool, id);

CREATE TRIGGER activity_no_update
BEFORE UPDATE ON activity
BEGIN
    SELECT RAISE(ABORT, 'the activity feed is append-only');
END;

CREATE TRIGGER activity_no_delete
BEFORE DELETE ON activity
BEGIN
    SELECT RAISE(ABORT, 'the activity feed is append-only');
END;

-- Voice turns used to be tool_events named 'voice_<outcome>'; in the feed a turn is one
-- action, 'voice_turn', with its outcome in its own column to filter on.
INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail, event_id)
SELECT e.at, e.actor,
       CASE WHEN e.action LIKE 'voice\_%' ESCAPE '\' THEN 'voice_turn' ELSE e.action END,
       e.tool_id, COALESCE(t.name, ''),
       CASE WHEN e.action LIKE 'voice\_%' ESCAPE '\' THEN substr(e.action, 7) ELSE '' END,
       e.detail, e.id
FROM tool_events e LEFT JOIN tools t ON t.id = e.tool_id
ORDER BY e.id;

CREATE TRIGGER tool_events_to_activity
AFTER INSERT ON tool_events
BEGIN
    INSERT INTO activity (at, actor, action, tool_id, tool, outcome, detail, event_id)
    VALUES (NEW.at, NEW.actor,
            CASE WHEN NEW.action LIKE 'voice\_%' ESCAPE '\' THEN 'voice_turn' ELSE NEW.action END,
            NEW.tool_id, COALESCE((SELECT name FROM tools WHERE id = NEW.tool_id), ''),
            CASE WHEN NEW.action LIKE 'voice\_%' ESCAPE '\' THEN substr(NEW.action, 7) ELSE '' END,
            NEW.detail, NEW.id);
END;

INSERT INTO activity (at, actor, action, detail)
SELECT approved_at, COALESCE(approved_by, 'owner'), 'command_approved',
       json_object('server', server, 'command', display, 'digest', digest)
FROM mcp_server_commands
WHERE approved_at IS NOT NULL
ORDER BY approved_at, id;

CREATE TRIGGER command_approved_to_activity
AFTER UPDATE OF approved_at ON mcp_server_commands
WHEN OLD.approved_at IS NULL AND NEW.approved_at IS NOT NULL
BEGIN
    INSERT INTO activity (at, actor, action, detail)
    VALUES (NEW.approved_at, COALESCE(NEW.approved_by, 'owner'), 'command_approved',
            json_object('server', NEW.server, 'command', NEW.display, 'digest', NEW.digest));
END;
