-- Browser sessions, in the shape github.com/alexedwards/scs/sqlite3store expects. Tokens are
-- stored hashed (scs HashTokenInStore); expiry is a Julian day number.
CREATE TABLE sessions (
    token  TEXT PRIMARY KEY,
    data   BLOB NOT NULL,
    expiry REAL NOT NULL
);

CREATE INDEX sessions_expiry_idx ON sessions (expiry);
