package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmtCache keeps statements prepared once, by their text, for the writes a discovery repeats:
// its multi-row INSERTs of tools and of their events are one text for every list of the same
// size, and parsing the text again for each server (1,900 placeholders for 100 tools) was a
// tenth of a discovery's CPU (issue 23). database/sql prepares a cached statement once on each
// connection that runs it, and finalises it when that connection closes.
type stmtCache struct {
	db *sql.DB

	mu      sync.Mutex
	byQuery map[string]*sql.Stmt
}

// maxCachedStmts bounds the cache: each statement holds its compiled program on every
// connection that ran it, and a large INSERT's is tens of KB. Texts past the bound are
// prepared for each use, as before.
const maxCachedStmts = 8

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, byQuery: map[string]*sql.Stmt{}}
}

// inTx returns the statement of query prepared for tx, or nil if the cache is full and query is
// not in it (or c is nil).
func (c *stmtCache) inTx(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.byQuery[query]
	if !ok {
		if len(c.byQuery) >= maxCachedStmts {
			return nil, nil
		}
		var err error
		if st, err = c.db.PrepareContext(ctx, query); err != nil {
			return nil, fmt.Errorf("prepare: %w", mapError(err, nil))
		}
		c.byQuery[query] = st
	}
	return tx.StmtContext(ctx, st), nil
}

// query runs query in tx through the cache.
func (c *stmtCache) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := c.inTx(ctx, tx, query)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return tx.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// exec runs query in tx through the cache.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := c.inTx(ctx, tx, query)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return tx.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}
