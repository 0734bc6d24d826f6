-- The act allowlist: one row per tool, identity (scope, cmd).
CREATE TABLE tools (
    id                INTEGER PRIMARY KEY,
    name              TEXT    NOT NULL UNIQUE,
    cmd               TEXT    NOT NULL,
    scope             TEXT    NOT NULL,
    state             TEXT    NOT NULL CHECK (state IN ('proposed', 'enabled', 'disabled', 'withdrawn')),
    destructive       INTEGER NOT NULL CHECK (destructive IN (0, 1)),
    read_only         INTEGER NOT NULL CHECK (read_only IN (0, 1)),
    description       TEXT    NOT NULL DEFAULT '',
    input_schema      TEXT    NOT NULL DEFAULT '{}',
    fingerprint       TEXT,
    declared          TEXT,
    previous_declared TEXT,
    changed_fields    TEXT,
    rename_of         TEXT,
    source            TEXT    NOT NULL,
    provenance        TEXT    NOT NULL DEFAULT '',
    created_at        TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL,
    enabled_at        TEXT,
    enabled_by        TEXT,
    UNIQUE (scope, cmd)
);

CREATE INDEX tools_state ON tools (state);

-- Rule 4, enforced by the database as well as the code: destructive is never lowered.
CREATE TRIGGER tools_destructive_never_lowered
BEFORE UPDATE OF destructive ON tools
WHEN OLD.destructive = 1 AND NEW.destructive = 0
BEGIN
    SELECT RAISE(ABORT, 'destructive is never lowered');
END;

-- Rule 3: the audit trail is appended to, never rewritten.
CREATE TABLE tool_events (
    id      INTEGER PRIMARY KEY,
    tool_id INTEGER NOT NULL REFERENCES tools (id),
    at      TEXT    NOT NULL,
    actor   TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    detail  TEXT    NOT NULL DEFAULT '{}'
);

CREATE INDEX tool_events_tool ON tool_events (tool_id, id);

CREATE TRIGGER tool_events_no_update
BEFORE UPDATE ON tool_events
BEGIN
    SELECT RAISE(ABORT, 'the audit trail is append-only');
END;

CREATE TRIGGER tool_events_no_delete
BEFORE DELETE ON tool_events
BEGIN
    SELECT RAISE(ABORT, 'the audit trail is append-only');
END;

-- Rows are never deleted: withdrawing is a state.
CREATE TRIGGER tools_no_delete
BEFORE DELETE ON tools
BEGIN
    SELECT RAISE(ABORT, 'tools are withdrawn, never deleted');
END;
