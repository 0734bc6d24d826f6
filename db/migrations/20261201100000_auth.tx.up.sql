-- The owner: one row, created with the first registration. The WebAuthn user handle is random.
CREATE TABLE owner (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    user_handle BLOB    NOT NULL UNIQUE,
    created_at  TEXT    NOT NULL
);

-- The owner's passkeys, with what the authenticator last reported about each.
CREATE TABLE passkeys (
    id                 INTEGER PRIMARY KEY,
    credential_id      BLOB    NOT NULL UNIQUE,
    public_key         BLOB    NOT NULL,
    attestation_type   TEXT    NOT NULL DEFAULT '',
    attestation_format TEXT    NOT NULL DEFAULT '',
    aaguid             BLOB,
    transports         TEXT    NOT NULL DEFAULT '[]',
    attachment         TEXT    NOT NULL DEFAULT '',
    sign_count         INTEGER NOT NULL DEFAULT 0,
    backup_eligible    INTEGER NOT NULL CHECK (backup_eligible IN (0, 1)),
    backup_state       INTEGER NOT NULL CHECK (backup_state IN (0, 1)),
    user_verified      INTEGER NOT NULL CHECK (user_verified IN (0, 1)),
    prf_enabled        INTEGER CHECK (prf_enabled IN (0, 1)), -- NULL: the probe got no answer
    name               TEXT    NOT NULL,
    created_at         TEXT    NOT NULL,
    last_used_at       TEXT
);

-- One-time setup links. Only a hash of the token is stored.
CREATE TABLE setup_links (
    id         INTEGER PRIMARY KEY,
    token_hash BLOB    NOT NULL UNIQUE,
    created_at TEXT    NOT NULL,
    expires_at TEXT    NOT NULL,
    used_at    TEXT
);
