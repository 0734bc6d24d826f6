package allowlist_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// countingStore counts the runnable reads that reach the database.
type countingStore struct {
	*db.ToolStore
	reads atomic.Int64
}

func (c *countingStore) GetRunnable(ctx context.Context, id int64) (allowlist.Runnable, error) {
	c.reads.Add(1)
	return c.ToolStore.GetRunnable(ctx, id)
}

// TestRunnableSeesEveryUpdate: Runnable answers a repeated read from memory, and after any update
// (disable, redefine, enable) reads the database again and says what is stored now.
func TestRunnableSeesEveryUpdate(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{ToolStore: db.NewToolStore(testdb.Open(t))}
	s := allowlist.NewService(store, time.Now)
	row, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true))
	if err != nil {
		t.Fatal(err)
	}
	toState(t, ctx, s, row.ID, allowlist.StateEnabled)

	want := func(state allowlist.State, fingerprint string, reads int64) {
		t.Helper()
		got, err := s.Runnable(ctx, row.ID)
		if err != nil || got.State != state || got.Fingerprint != fingerprint {
			t.Fatalf("Runnable = %+v, %v; want %s with %s", got, err, state, fingerprint)
		}
		if n := store.reads.Load(); n != reads {
			t.Fatalf("%d database reads, want %d", n, reads)
		}
	}
	want(allowlist.StateEnabled, "sha256:1", 1)
	want(allowlist.StateEnabled, "sha256:1", 1) // from memory

	if _, err := s.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	want(allowlist.StateDisabled, "sha256:1", 2)

	toState(t, ctx, s, row.ID, allowlist.StateEnabled)
	want(allowlist.StateEnabled, "sha256:1", 3)
	if err := s.Update(ctx, func(tx *allowlist.Tx) error {
		_, err := tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{Fingerprint: "sha256:2", Declared: `{"name":"tool","description":"now deletes"}`,
			Description: "now deletes", InputSchema: []byte(`{"type":"object"}`), ChangedFields: []string{"description"}, Provenance: "redefined"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want(allowlist.StateProposed, "sha256:2", 4)
	want(allowlist.StateProposed, "sha256:2", 4)
}

// TestRunnableNeverStaleAfterDisable races reads against the owner's enable and disable: once
// DisableTool has returned, no Runnable says enabled.
func TestRunnableNeverStaleAfterDisable(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	row, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Runnable(ctx, row.ID); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 30 {
		toState(t, ctx, s, row.ID, allowlist.StateEnabled)
		if _, err := s.DisableTool(ctx, row.ID, "owner"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Runnable(ctx, row.ID); err != nil || got.State != allowlist.StateDisabled {
			t.Fatalf("Runnable right after DisableTool = %+v, %v", got, err)
		}
	}
	close(stop)
	wg.Wait()
}

// countsStore counts the whole allowlist's counts that reach the database.
type countsStore struct {
	*db.ToolStore
	counts atomic.Int64
}

func (c *countsStore) CountByState(ctx context.Context, f allowlist.Filter) (map[allowlist.State]int, error) {
	if f.Query == "" && f.Scope == "" && f.IDs == nil && len(f.States) == 0 {
		c.counts.Add(1)
	}
	return c.ToolStore.CountByState(ctx, f)
}

// TestCountsSeeEveryUpdate: the whole allowlist's counts per state are read from the database
// once, answered from memory while nothing is written, and read again after any update; a
// count of some rows only is always read.
func TestCountsSeeEveryUpdate(t *testing.T) {
	ctx := context.Background()
	store := &countsStore{ToolStore: db.NewToolStore(testdb.Open(t))}
	s := allowlist.NewService(store, time.Now)
	row, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true))
	if err != nil {
		t.Fatal(err)
	}
	want := func(proposed, disabled int, reads int64) {
		t.Helper()
		got, err := s.CountByState(ctx, allowlist.Filter{})
		if err != nil || got[allowlist.StateProposed] != proposed || got[allowlist.StateDisabled] != disabled {
			t.Fatalf("CountByState = %v, %v; want %d proposed, %d disabled", got, err, proposed, disabled)
		}
		if n := store.counts.Load(); n != reads {
			t.Fatalf("%d database counts, want %d", n, reads)
		}
		got[allowlist.StateEnabled] = 99 // the caller's own map: the next answer is not changed
	}
	want(1, 0, 1)
	want(1, 0, 1) // from memory
	if _, err := s.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	want(0, 1, 2)
	want(0, 1, 2)
	if _, _, err := s.ProposeTool(ctx, mcpProposal("srv", "other", true)); err != nil {
		t.Fatal(err)
	}
	want(1, 1, 3)
	if got, err := s.CountByState(ctx, allowlist.Filter{Query: "other"}); err != nil || got[allowlist.StateProposed] != 1 || got[allowlist.StateDisabled] != 0 {
		t.Fatalf("a searched count: %v, %v", got, err)
	}
	want(1, 1, 3)
}
