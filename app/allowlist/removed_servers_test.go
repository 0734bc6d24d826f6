package allowlist_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"maven/app/allowlist"
)

// TestWithdrawRemovedServers: the rows of a server the config no longer names are withdrawn,
// whatever their state, saying so; the rows of configured servers and local commands are left
// as they are, and a second call finds nothing more to do.
func TestWithdrawRemovedServers(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	ids := map[string]int64{}
	for _, c := range []struct {
		server, tool string
		state        allowlist.State
	}{
		{"kept", "a", allowlist.StateEnabled},
		{"gone", "b", allowlist.StateEnabled},
		{"gone", "c", allowlist.StateDisabled},
		{"gone", "d", allowlist.StateProposed},
		{"gone", "e", allowlist.StateWithdrawn},
		{"other", "f", allowlist.StateProposed},
	} {
		row, _, err := s.ProposeTool(ctx, mcpProposal(c.server, c.tool, true))
		if err != nil {
			t.Fatal(err)
		}
		toState(t, ctx, s, row.ID, c.state)
		ids[c.server+"/"+c.tool] = row.ID
	}
	local, _, err := s.ProposeTool(ctx, allowlist.Proposal{Name: "uptime", Cmd: []string{"/usr/bin/uptime"}, Scope: allowlist.ScopeLocal,
		Source: allowlist.SourceCLI, InputSchema: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	before := eventCount(t, s, ids["gone/e"])

	withdrawn, err := s.WithdrawRemovedServers(ctx, []string{"kept"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(withdrawn, []string{"gone", "other"}) {
		t.Errorf("servers withdrawn: %v", withdrawn)
	}
	for key, want := range map[string]string{
		"kept/a": "enabled", "gone/b": "withdrawn", "gone/c": "withdrawn", "gone/d": "withdrawn",
		"gone/e": "withdrawn", "other/f": "withdrawn",
	} {
		row, err := s.Get(ctx, ids[key])
		if err != nil {
			t.Fatal(err)
		}
		if string(row.State) != want {
			t.Errorf("%s is %s, want %s", key, row.State, want)
		}
		if want == "withdrawn" && key != "gone/e" && row.Provenance != "removed from config" {
			t.Errorf("%s provenance %q", key, row.Provenance)
		}
	}
	if eventCount(t, s, ids["gone/e"]) != before {
		t.Error("a row withdrawn already got another event")
	}
	if row, _ := s.Get(ctx, local.ID); row.State != allowlist.StateProposed {
		t.Errorf("a local command was touched: %+v", row)
	}
	evs, err := s.Events(ctx, ids["gone/b"])
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Actor != "config" || evs[len(evs)-1].Action != "withdrawn" {
		t.Errorf("the withdrawal is not audited as the config's: %+v %v", evs, err)
	}

	again, err := s.WithdrawRemovedServers(ctx, []string{"kept"})
	if err != nil || len(again) != 0 {
		t.Errorf("a second call: %v %v", again, err)
	}
}
