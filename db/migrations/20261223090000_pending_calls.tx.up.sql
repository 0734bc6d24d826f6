-- Calls that wait for the owner's approval on the phone (docs/design.md#rule-30 to
-- docs/design.md#rule-32). Each is bound to its client, its row's id, fingerprint and command,
-- and its canonical (JCS) arguments, and expires. A call approved is written running before its
-- run, so a crash leaves it running and the next start marks it interrupted. The result is
-- kept for the page, and its MCP content for the agent that asks again until it collects it
-- or the call expires.
CREATE TABLE pending_calls (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id   TEXT    NOT NULL,
    client_name TEXT    NOT NULL,
    tool_id     INTEGER NOT NULL REFERENCES tools (id),
    tool_name   TEXT    NOT NULL,
    cmd         TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    args        TEXT    NOT NULL,
    absent      TEXT    NOT NULL DEFAULT '[]',
    why         TEXT    NOT NULL DEFAULT '',
    created_at  TEXT    NOT NULL,
    expires_at  TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    decided_by  TEXT    NOT NULL DEFAULT '',
    decided_at  TEXT,
    finished_at TEXT,
    result      TEXT,
    collected   INTEGER NOT NULL DEFAULT 0,
    deliveries  TEXT
);
-- The open calls (pending, running) are read on every round, the identical ones on every
-- submit, and the latest final ones for the page.
CREATE INDEX pending_calls_open ON pending_calls (state, client_id, tool_id);
CREATE INDEX pending_calls_finished ON pending_calls (finished_at) WHERE finished_at IS NOT NULL;
