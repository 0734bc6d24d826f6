-- A passkey's key slot keeps its X25519 public key, sealed under the data key, so that rotating
-- the data key can wrap the new one for every passkey without the passkey (DESIGN.md rule 22).
ALTER TABLE vault_slots ADD COLUMN public_key BLOB;
