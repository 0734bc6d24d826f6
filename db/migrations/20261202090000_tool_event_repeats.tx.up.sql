-- Repeats of an event (issue 10). A server that redefines a tool again and again would append an
-- event each time, without bound. Instead the first redefinition in a churn window is an event
-- in tool_events, and each redefinition that follows it directly, with nothing else recorded for
-- that tool in between, is counted here against that event. tool_events stays append-only:
-- this table adds to what an event says (it happened again, N times, the last time at last_at
-- with last_detail, in the shape of the event's detail) and never changes it, and its count
-- only grows. With last_detail the trail still replays to the rows.
CREATE TABLE tool_event_repeats (
    event_id    INTEGER PRIMARY KEY REFERENCES tool_events (id),
    count       INTEGER NOT NULL CHECK (count > 0),
    last_at     TEXT    NOT NULL,
    last_detail TEXT    NOT NULL DEFAULT '{}'
);

CREATE TRIGGER tool_event_repeats_only_grow
BEFORE UPDATE ON tool_event_repeats
WHEN NEW.count < OLD.count OR NEW.last_at < OLD.last_at OR NEW.event_id IS NOT OLD.event_id
BEGIN
    SELECT RAISE(ABORT, 'a repeat count only grows');
END;

CREATE TRIGGER tool_event_repeats_no_delete
BEFORE DELETE ON tool_event_repeats
BEGIN
    SELECT RAISE(ABORT, 'the audit trail is append-only');
END;
