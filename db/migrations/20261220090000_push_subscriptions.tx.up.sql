-- The browsers subscribed to Web Push notifications of calls waiting for approval
-- (docs/design.md#rule-30): the push service's endpoint and the browser's keys for the
-- payload's encryption (RFC 8291), and a label naming the browser for the owner. The VAPID key
-- pair is a setting.
CREATE TABLE push_subscriptions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint   TEXT NOT NULL UNIQUE,
    p256dh     TEXT NOT NULL,
    auth       TEXT NOT NULL,
    label      TEXT NOT NULL,
    created_at TEXT NOT NULL
);
