package allowlist_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"maven/app/allowlist"
)

// TestChangedIsClosedByEveryUpdate: the channel Changed returns stays open while nothing is
// written, and is closed by the next update, a failed one included; the next call returns a
// fresh one.
func TestChangedIsClosedByEveryUpdate(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	first := s.Changed()
	if closed(first) {
		t.Fatal("Changed is closed before any update")
	}
	if s.Changed() != first {
		t.Fatal("two calls without an update between them return two channels")
	}
	if _, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true)); err != nil {
		t.Fatal(err)
	}
	if !closed(first) {
		t.Fatal("a proposal did not close Changed")
	}
	second := s.Changed()
	if closed(second) {
		t.Fatal("the channel after an update is closed already")
	}
	failed := errors.New("rolled back")
	if err := s.Update(ctx, func(*allowlist.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("Update = %v", err)
	}
	if !closed(second) {
		t.Fatal("a failed update did not close Changed")
	}
}

// TestChangedSinceNamesTheRowsUpdatesWrote: ChangedSince(v) gives the ids of the rows every
// update after version v wrote, once each (a proposal, an enabling, a disabling), none for a
// version the rows still have, and does not claim to know for a version older than the updates
// it keeps, or one the rows never had.
func TestChangedSinceNamesTheRowsUpdatesWrote(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	start := s.Version()
	a, _, err := s.ProposeTool(ctx, mcpProposal("srv", "a", true))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.ProposeTool(ctx, mcpProposal("srv", "b", true))
	if err != nil {
		t.Fatal(err)
	}
	proposed := s.Version()
	toState(t, ctx, s, b.ID, allowlist.StateEnabled)
	toState(t, ctx, s, b.ID, allowlist.StateDisabled)
	if ids, ok := s.ChangedSince(start); !ok || !slices.Equal(ids, []int64{a.ID, b.ID}) {
		t.Errorf("ChangedSince(start) = %v %v, want [%d %d]", ids, ok, a.ID, b.ID)
	}
	if ids, ok := s.ChangedSince(proposed); !ok || !slices.Equal(ids, []int64{b.ID}) {
		t.Errorf("ChangedSince(after the proposals) = %v %v, want [%d]", ids, ok, b.ID)
	}
	if ids, ok := s.ChangedSince(s.Version()); !ok || len(ids) != 0 {
		t.Errorf("ChangedSince(now) = %v %v, want none", ids, ok)
	}
	if _, ok := s.ChangedSince(s.Version() + 1); ok {
		t.Error("ChangedSince of a version the rows never had claims to know")
	}
	for range 70 {
		toState(t, ctx, s, b.ID, allowlist.StateEnabled)
		toState(t, ctx, s, b.ID, allowlist.StateDisabled)
	}
	if ids, ok := s.ChangedSince(start); ok {
		t.Errorf("ChangedSince 142 updates back = %v, true: more than it keeps", ids)
	}
}
