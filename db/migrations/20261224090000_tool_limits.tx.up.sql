-- The owner's limits on an enabled MCP tool's arguments and whether calls within them run
-- without asking (docs/design.md#rule-33), one row per tool, replaced on every save: the
-- canonical JSON of the set, {"properties": {NAME: JSON Schema keywords},
-- "run_without_asking": bool}. They are stored with the fingerprint they were saved for, and
-- are part of the tool's approval: once its fingerprint changes they are void (voided_at), in
-- the same transaction, and a later return to that shape does not bring them back. Only a new
-- save, behind a step-up, clears voided_at. Every save is also a tool_events entry.
CREATE TABLE tool_limits (
    tool_id     INTEGER PRIMARY KEY REFERENCES tools (id),
    limits      TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    saved_at    TEXT    NOT NULL,
    saved_by    TEXT    NOT NULL,
    voided_at   TEXT
);

CREATE TRIGGER tool_limits_void_on_redefinition
AFTER UPDATE OF fingerprint ON tools
WHEN OLD.fingerprint IS NOT NULL AND NEW.fingerprint IS NOT OLD.fingerprint
BEGIN
    UPDATE tool_limits SET voided_at = NEW.updated_at WHERE tool_id = NEW.id AND voided_at IS NULL;
END;
