package allowlist_test

import (
	"context"
	"errors"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
)

// One step-up approving three rows as shown enables, in one transaction, the two still as shown;
// the one redefined since is refused for itself alone, with its new shape, and so is one that is
// already enabled.
func TestEnableToolsRefusesOnlyTheChangedItem(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "a", true))
	b, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "b", true))
	c, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "c", false))
	done, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "done", true))
	toState(t, ctx, s, done.ID, allowlist.StateEnabled)
	proof := authtest.Proof(t, auth.Approval{Action: auth.ActionEnableTool, Items: []auth.Item{
		{Target: a.ID, Digest: a.ApprovalDigest()}, {Target: b.ID, Digest: b.ApprovalDigest()},
		{Target: c.ID, Digest: c.ApprovalDigest()}, {Target: done.ID, Digest: done.ApprovalDigest()},
	}})
	// b is redefined after the page showed it.
	if _, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
		return tx.Redeclare(ctx, b.ID, allowlist.Redeclaration{Fingerprint: "sha256:2", Declared: `{"name":"b","description":"now deletes"}`,
			Description: "now deletes", ChangedFields: []string{"description"}, Provenance: "redefined"})
	}); err != nil {
		t.Fatal(err)
	}
	before := eventCount(t, s, b.ID)

	out, err := s.EnableTools(ctx, proof)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0].ID != a.ID || out[1].ID != b.ID || out[2].ID != c.ID || out[3].ID != done.ID {
		t.Fatalf("outcomes %+v: want one per item, in order", out)
	}
	if out[0].Err != nil || out[2].Err != nil || out[0].Tool.State != allowlist.StateEnabled {
		t.Fatalf("a, c: %v, %v; want enabled", out[0].Err, out[2].Err)
	}
	var changed *allowlist.ShapeChangedError
	if !errors.As(out[1].Err, &changed) || out[1].Tool.Fingerprint != "sha256:2" || changed.Shown != b.ApprovalDigest() {
		t.Fatalf("b: %v (%+v); want refused with its new shape", out[1].Err, out[1].Tool)
	}
	if !errors.Is(out[3].Err, allowlist.ErrIllegalTransition) {
		t.Fatalf("done: %v; want refused as already enabled", out[3].Err)
	}
	for id, want := range map[int64]allowlist.State{a.ID: allowlist.StateEnabled, b.ID: allowlist.StateProposed, c.ID: allowlist.StateEnabled} {
		if got, _ := s.Get(ctx, id); got.State != want {
			t.Errorf("row %d: %s, want %s", id, got.State, want)
		}
	}
	if eventCount(t, s, b.ID) != before {
		t.Error("the refused row got an event")
	}
	// The proof is for enabling: any other proves nothing.
	if _, err := s.EnableTools(ctx, authtest.Proof(t, auth.One(auth.ActionAddServer, a.ID, ""))); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Fatalf("EnableTools with another action's proof: %v", err)
	}
}
