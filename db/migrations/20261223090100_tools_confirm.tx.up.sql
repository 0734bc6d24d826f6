-- How a destructive row's voice calls are confirmed (docs/design.md#rule-32): "voice", a spoken
-- yes, or "phone", a pending call approved on the phone with a passkey. Set behind a step-up.
ALTER TABLE tools ADD COLUMN confirm TEXT NOT NULL DEFAULT 'voice';
