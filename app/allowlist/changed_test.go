package allowlist_test

import (
	"context"
	"errors"
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
