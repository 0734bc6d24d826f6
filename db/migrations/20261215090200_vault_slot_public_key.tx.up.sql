-- A passkey's key slot keeps its X25519 public key, sealed under the data key, so that rotating
-- the data key can wrap the new one for every passkey without the passkey
-- (docs/design.md#rule-22). Its id sorts after every migration a released Maven ran.
ALTER TABLE vault_slots ADD COLUMN public_key BLOB;
