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
