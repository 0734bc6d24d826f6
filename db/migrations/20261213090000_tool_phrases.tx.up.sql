-- The owner's voice phrases of an enabled MCP tool (docs/design.md#rule-15b), one row per tool,
-- replaced on every save. They are stored with the fingerprint they were saved for: once the
-- tool's fingerprint differs, they do not apply. Every save is also a tool_events entry.
CREATE TABLE tool_phrases (
    tool_id     INTEGER PRIMARY KEY REFERENCES tools (id),
    phrases     TEXT    NOT NULL DEFAULT '[]',
    fingerprint TEXT    NOT NULL,
    saved_at    TEXT    NOT NULL,
    saved_by    TEXT    NOT NULL
);
