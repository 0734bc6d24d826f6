package allowlist_test

import (
	"context"
	"errors"
	"testing"

	"maven/app/allowlist"
)

// TestProposeNew: many new rows at once are what Propose makes of each, each with its event
// and its own id; a name or an identity already taken fails the whole batch.
func TestProposeNew(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	var ps []allowlist.Proposal
	for _, n := range []string{"c", "a", "b"} {
		ps = append(ps, mcpProposal("srv", n, n == "a"))
	}
	var rows []allowlist.Tool
	if err := s.Update(ctx, func(tx *allowlist.Tx) error {
		var err error
		rows, err = tx.ProposeNew(ctx, ps)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		got, err := s.Get(ctx, r.ID)
		if err != nil || got.Name != ps[i].Name || got.State != allowlist.StateProposed || got.Destructive != ps[i].Destructive {
			t.Errorf("row %d: %+v %v, want %s", r.ID, got, err, ps[i].Name)
		}
		if n := eventCount(t, s, r.ID); n != 1 {
			t.Errorf("row %s has %d events, want its proposal", r.Name, n)
		}
	}
	for name, p := range map[string]allowlist.Proposal{
		"a taken identity": mcpProposal("srv", "a", true),
		"a taken name": func() allowlist.Proposal {
			p := mcpProposal("srv", "d", true)
			p.Name = ps[0].Name
			return p
		}(),
	} {
		err := s.Update(ctx, func(tx *allowlist.Tx) error {
			_, err := tx.ProposeNew(ctx, []allowlist.Proposal{mcpProposal("srv", "e", true), p})
			return err
		})
		if !errors.Is(err, allowlist.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if all, _ := s.List(ctx, allowlist.Filter{}); len(all) != 3 {
		t.Errorf("%d rows after two failed batches, want 3", len(all))
	}
}
