package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
)

// TestRepeatsOnlyGrow: a repeat count, like the events it counts against, is never lowered or
// deleted, not even by a direct write.
func TestRepeatsOnlyGrow(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	row, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: "t", Cmd: []string{"/bin/t"},
		Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var last allowlist.Event
	err = store.Update(ctx, func(tx allowlist.TxStore) error {
		if last, err = tx.LastEvent(ctx, row.ID); err != nil {
			return err
		}
		for range 2 {
			if err := tx.CountRepeat(ctx, last.ID, time.Now(), json.RawMessage(`{"n":1}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := svc.Events(ctx, row.ID)
	if err != nil || len(evs) != 1 || evs[0].ID != last.ID || evs[0].Repeats != 2 || evs[0].LastRepeat.IsZero() ||
		string(evs[0].LastRepeatDetail) != `{"n":1}` {
		t.Fatalf("events %+v %v, want the proposal repeated twice", evs, err)
	}
	for _, q := range []string{
		"UPDATE tool_event_repeats SET count = 1",
		"UPDATE tool_event_repeats SET last_at = '2000-01-01T00:00:00.000000000Z'",
		"DELETE FROM tool_event_repeats",
	} {
		if _, err := bdb.ExecContext(ctx, q); err == nil {
			t.Errorf("%s: the database allowed it", q)
		}
	}
	if err := store.Update(ctx, func(tx allowlist.TxStore) error { return tx.CountRepeat(ctx, last.ID+100, time.Now(), nil) }); err == nil {
		t.Error("a repeat of an event that does not exist was counted")
	}
}
