package allowlist

import (
	"slices"
	"sync"
)

// Bounds of what the change log keeps: a reader further behind reads every row again.
const (
	changesKept    = 64   // updates
	changesKeptIDs = 4096 // row ids, all kept updates together
)

// changeLog remembers which rows each recent update wrote, so that a reader that derived
// something from the rows at one version can read again only those rows (ChangedSince): the
// tools agents see follow one redefined row without listing every enabled row again.
type changeLog struct {
	mu    sync.Mutex
	from  uint64    // the version before the first update kept
	ids   [][]int64 // ids[i]: the rows written by the update that made version from+i+1
	count int       // the ids kept, all updates together
}

// recordUpdate records the rows an update wrote and moves the version on, together: whoever sees the
// new version finds what made it.
func (s *Service) recordUpdate(written []int64) {
	c := &s.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	v := s.version.Add(1)
	if len(written) > changesKeptIDs {
		c.from, c.ids, c.count = v, nil, 0
		return
	}
	c.ids = append(c.ids, written)
	c.count += len(written)
	for len(c.ids) > changesKept || c.count > changesKeptIDs {
		c.count -= len(c.ids[0])
		c.ids = c.ids[1:]
		c.from++
	}
}

// ChangedSince returns the ids of the rows written by the updates committed after version
// (each at most once, in no order), and whether it knows them: false when version is older than
// what the log keeps, or not a version the rows have had.
func (s *Service) ChangedSince(version uint64) ([]int64, bool) {
	c := &s.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	if version < c.from || version > s.version.Load() {
		return nil, false
	}
	var out []int64
	for _, ids := range c.ids[version-c.from:] {
		out = append(out, ids...)
	}
	slices.Sort(out)
	return slices.Compact(out), true
}
