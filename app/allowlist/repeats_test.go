package allowlist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"maven/app/allowlist"
)

// TestRedeclareCoalescesRepeats: with CoalesceSince, a redefinition that follows a redefinition
// directly is counted against it instead of appended; anything else recorded in between, a
// change of state, a raised destructive or a redefinition older than CoalesceSince starts a new
// event. No event is ever rewritten.
func TestRedeclareCoalescesRepeats(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	row, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "t", true))
	toState(t, ctx, s, row.ID, allowlist.StateEnabled)
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	redeclare := func(readOnly bool, since time.Time) {
		t.Helper()
		n++
		if _, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
			return tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{
				Fingerprint: fmt.Sprintf("sha256:%d", n+1), Declared: fmt.Sprintf(`{"name":"t","v":%d}`, n),
				ReadOnly: readOnly, ChangedFields: []string{"description"}, CoalesceSince: since,
			})
		}); err != nil {
			t.Fatal(err)
		}
	}
	trail := func() string {
		t.Helper()
		evs, err := s.Events(ctx, row.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range evs {
			out += e.Action
			if e.Repeats > 0 {
				out += fmt.Sprintf("×%d", e.Repeats+1)
				if e.LastRepeat.Before(e.At) {
					t.Errorf("event %d repeated at %s, before it happened at %s", e.ID, e.LastRepeat, e.At)
				}
			}
			out += " "
		}
		return out
	}

	redeclare(true, since) // enabled → proposed: a change of state, always an event
	redeclare(true, since) // the same kind of change again: counted
	redeclare(true, since)
	if got, want := trail(), "proposed enabled redefined×3 "; got != want {
		t.Fatalf("trail %q, want %q", got, want)
	}
	// A page that showed the shape the last counted redefinition replaced can still say what
	// that shape was.
	if got, err := s.DeclaredWhen(ctx, row.ID, "sha256:3"); err != nil || got != `{"name":"t","v":2}` {
		t.Fatalf("DeclaredWhen(the shape before the last repeat) = %q, %v", got, err)
	}
	if _, err := s.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	redeclare(true, since) // after something else happened: an event of its own
	redeclare(true, since)
	redeclare(false, since) // stops claiming read-only: destructive is raised, an event
	redeclare(false, since)
	redeclare(false, time.Now().Add(time.Hour)) // a new window: an event of its own
	if got, want := trail(), "proposed enabled redefined×3 disabled redefined×2 redefined×2 redefined "; got != want {
		t.Fatalf("trail %q, want %q", got, want)
	}
	if got, err := s.Get(ctx, row.ID); err != nil || got.Fingerprint != fmt.Sprintf("sha256:%d", n+1) {
		t.Fatalf("a counted redefinition did not update the row: %+v %v", got, err)
	}
}

// TestRedeclareWithoutCoalescingIsAlwaysAnEvent: the zero CoalesceSince keeps one event per
// redefinition.
func TestRedeclareWithoutCoalescingIsAlwaysAnEvent(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	row, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "t", true))
	for i := range 3 {
		if _, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
			return tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{Fingerprint: fmt.Sprintf("sha256:x%d", i), Declared: "{}", ReadOnly: true})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventCount(t, s, row.ID); got != 4 {
		t.Fatalf("%d events, want the proposal and three redefinitions", got)
	}
}
