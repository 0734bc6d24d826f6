package allowlist_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// enteringStore counts the transactions the store was asked to begin.
type enteringStore struct {
	*db.ToolStore
	entered atomic.Int64
}

func (e *enteringStore) Update(ctx context.Context, fn func(allowlist.TxStore) error) error {
	e.entered.Add(1)
	return e.ToolStore.Update(ctx, fn)
}

// TestUpdatesTakeTurns: while one update runs, another waits for it without asking the store for
// a transaction (a hundred servers discovered at once were a hundred connections waiting for
// SQLite's write lock); one whose context ends while it waits returns that context's error and
// writes nothing, and one that waits runs once the first is done.
func TestUpdatesTakeTurns(t *testing.T) {
	ctx := context.Background()
	store := &enteringStore{ToolStore: db.NewToolStore(testdb.Open(t))}
	s := allowlist.NewService(store, time.Now)
	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Update(ctx, func(tx *allowlist.Tx) error {
			close(inside)
			<-release
			_, _, err := tx.Propose(ctx, mcpProposal("srv", "first", true))
			return err
		})
	}()
	<-inside

	gone, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Update(gone, func(tx *allowlist.Tx) error {
		t.Error("an update ran beside another")
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("an update whose context ended while it waited: %v", err)
	}
	if n := store.entered.Load(); n != 1 {
		t.Fatalf("%d transactions begun while the first update ran, want 1", n)
	}

	second := make(chan error, 1)
	go func() {
		second <- s.Update(ctx, func(tx *allowlist.Tx) error {
			_, _, err := tx.Propose(ctx, mcpProposal("srv", "second", true))
			return err
		})
	}()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	rows, err := s.List(ctx, allowlist.Filter{Scope: "mcp:srv"})
	if err != nil || len(rows) != 2 {
		t.Fatalf("after both updates: %d rows, %v", len(rows), err)
	}
}
