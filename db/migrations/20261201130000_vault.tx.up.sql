-- The vault (DESIGN.md rule 22): the data key, wrapped once per unlock method ("key slots"), and
-- the secrets it seals. Nothing here is readable without a PRF output or the recovery code.
CREATE TABLE vault_slots (
    id            INTEGER PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('prf', 'recovery')),
    credential_id BLOB    UNIQUE,          -- prf slots: the passkey's credential ID
    prf_input     BLOB,                    -- prf slots: the value the browser evaluates
    kdf           TEXT    NOT NULL,        -- slot header: KDF and its parameters
    salt          BLOB    NOT NULL,
    nonce         BLOB    NOT NULL,
    wrapped_key   BLOB    NOT NULL,
    created_at    TEXT    NOT NULL,
    last_used_at  TEXT,
    CHECK ((kind = 'prf') = (credential_id IS NOT NULL AND prf_input IS NOT NULL))
);

-- At most one recovery slot: regenerating the code replaces it.
CREATE UNIQUE INDEX vault_slots_one_recovery ON vault_slots (kind) WHERE kind = 'recovery';

-- Sealed secrets: AES-256-GCM under the data key, the name in the associated data.
CREATE TABLE vault_secrets (
    name       TEXT PRIMARY KEY,
    nonce      BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
