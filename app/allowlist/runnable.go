package allowlist

import (
	"context"
	"slices"
	"sync"
)

// Runnable returns the state, fingerprint and command of one row as stored now, or ErrNotFound.
// Every write to the rows goes through Update, which moves the version on once it has
// committed, so a read made at the current version is still what is stored: it is answered
// from memory, and the run that asks before it starts (docs/design.md#rule-5) saves a
// database read. A read that raced an update is kept at the old version, which no later
// lookup matches.
func (s *Service) Runnable(ctx context.Context, id int64) (Runnable, error) {
	v := s.version.Load()
	c := &s.runnable
	c.mu.Lock()
	r, ok := c.rows[id]
	ok = ok && c.version == v
	c.mu.Unlock()
	if ok {
		r.Cmd = slices.Clone(r.Cmd)
		return r, nil
	}
	r, err := s.store.GetRunnable(ctx, id)
	if err != nil {
		return Runnable{}, err
	}
	c.mu.Lock()
	if c.version != v {
		c.version, c.rows = v, make(map[int64]Runnable)
	}
	c.rows[id] = Runnable{State: r.State, Fingerprint: r.Fingerprint, Cmd: slices.Clone(r.Cmd)}
	c.mu.Unlock()
	return r, nil
}

// runnableCache is what Runnable read from the store at version, by row id.
type runnableCache struct {
	mu      sync.Mutex
	version uint64
	rows    map[int64]Runnable
}
