package allowlist

import (
	"context"
	"maps"
	"sync"
)

// CountByState counts the rows that match filter in each state. The whole allowlist's counts,
// which every /tools page and every poll of the servers card shows, are answered from memory
// while no update has committed since they were read, as Runnable is: counting them reads every
// row's state, which over tens of thousands of rows costs more than the rest of the page.
func (s *Service) CountByState(ctx context.Context, filter Filter) (map[State]int, error) {
	if !filter.everyRow() {
		return s.store.CountByState(ctx, filter)
	}
	v := s.version.Load()
	c := &s.counts
	c.mu.Lock()
	counts, ok := c.counts, c.counts != nil && c.version == v
	c.mu.Unlock()
	if ok {
		return maps.Clone(counts), nil
	}
	counts, err := s.store.CountByState(ctx, filter)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.version, c.counts = v, maps.Clone(counts)
	c.mu.Unlock()
	return counts, nil
}

// everyRow reports whether f keeps every row (CountByState ignores its order and paging).
func (f Filter) everyRow() bool {
	return f.Scope == "" && len(f.States) == 0 && f.Source == "" && f.IDs == nil && f.Query == ""
}

// countsCache is the whole allowlist's counts as read at version. A read that raced an update
// is kept at the version before it, which no later lookup matches.
type countsCache struct {
	mu      sync.Mutex
	version uint64
	counts  map[State]int
}
