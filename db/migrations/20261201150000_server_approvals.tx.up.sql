-- The command lines of stdio MCP servers, and the owner's approval of each: a command line
-- that is not approved never starts (DESIGN.md rule 25).
CREATE TABLE mcp_server_commands (
    id          INTEGER PRIMARY KEY,
    server      TEXT NOT NULL,
    digest      TEXT NOT NULL,
    display     TEXT NOT NULL,
    seen_at     TEXT NOT NULL,
    approved_at TEXT,
    approved_by TEXT,
    UNIQUE (server, digest)
);
