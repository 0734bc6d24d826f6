-- The clients agents connect through (docs/design.md#rule-29): static tokens, clients that
-- registered themselves (RFC 7591), and clients of metadata documents the owner approved. A
-- static token or a client secret is kept as its SHA-256 only. A registration never consented
-- to ("pending") is deleted 15 minutes after it came (app/clients.PendingLifetime).
CREATE TABLE clients (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL CHECK (kind IN ('static', 'registered', 'metadata')),
    state         TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'revoked')),
    name          TEXT NOT NULL,
    redirect_uris TEXT NOT NULL DEFAULT '[]',
    grant_types   TEXT NOT NULL DEFAULT '[]',
    auth_method   TEXT NOT NULL DEFAULT '',
    secret_hash   BLOB,
    scope         TEXT NOT NULL DEFAULT '',
    all_tools     INTEGER NOT NULL DEFAULT 0,
    tool_ids      TEXT NOT NULL DEFAULT '[]',
    created_at    TEXT NOT NULL,
    approved_at   TEXT,
    last_seen     TEXT,
    revoked_at    TEXT,
    calls         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX clients_pending ON clients (created_at) WHERE state = 'pending';

-- What Maven's authorization server issued, by signature (the HMAC half of a token, which does
-- not give the token back): authorization codes, their PKCE challenges, access and refresh
-- tokens. request_id names the authorization, which every token of a refresh family shares;
-- a used code and a rotated refresh token stay, inactive, until they expire, so that their
-- reuse is recognised.
CREATE TABLE oauth_tokens (
    kind       TEXT NOT NULL CHECK (kind IN ('code', 'pkce', 'access', 'refresh')),
    signature  TEXT NOT NULL,
    request_id TEXT NOT NULL,
    client_id  TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
    active     INTEGER NOT NULL DEFAULT 1,
    expires_at TEXT,
    request    TEXT NOT NULL,
    PRIMARY KEY (kind, signature)
) WITHOUT ROWID;
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id, kind);
CREATE INDEX oauth_tokens_client ON oauth_tokens (client_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at) WHERE expires_at IS NOT NULL;
