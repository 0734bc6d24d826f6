package allowlist_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

func newService(t testing.TB) (*allowlist.Service, *db.ToolStore) {
	t.Helper()
	store := db.NewToolStore(testdb.Open(t))
	clock := testclock.Ticking(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), time.Second)
	return allowlist.NewService(store, clock.Now), store
}

func mcpProposal(server, tool string, readOnly bool) allowlist.Proposal {
	return allowlist.Proposal{
		Name: server + "_" + tool, Cmd: []string{"mcp", server, tool}, Scope: allowlist.MCPScope(server),
		Destructive: !readOnly, ReadOnly: readOnly, Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		Fingerprint: "sha256:1", Declared: `{"name":"` + tool + `"}`, Source: allowlist.SourceDiscovery,
		Provenance: "discovered", Actor: "discovery",
	}
}

// enableProof is a real step-up approving the enabling of row id as it is now.
func enableProof(t *testing.T, s *allowlist.Service, id int64) auth.StepUp {
	t.Helper()
	row, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return authtest.Proof(t, auth.One(auth.ActionEnableTool, id, row.ApprovalDigest()))
}

// toState drives a fresh proposed row to the wanted starting state through legal moves.
func toState(t *testing.T, ctx context.Context, s *allowlist.Service, id int64, state allowlist.State) {
	t.Helper()
	var err error
	switch state {
	case allowlist.StateProposed:
	case allowlist.StateEnabled:
		_, err = s.EnableTool(ctx, id, enableProof(t, s, id))
	case allowlist.StateDisabled:
		_, err = s.DisableTool(ctx, id, "owner")
	case allowlist.StateWithdrawn:
		_, err = s.Withdraw(ctx, id, "test", "gone")
	}
	if err != nil {
		t.Fatalf("setting up %s: %v", state, err)
	}
}

func eventCount(t *testing.T, s *allowlist.Service, id int64) int {
	t.Helper()
	evs, err := s.Events(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func TestTransitions(t *testing.T) {
	states := allowlist.States()
	type move struct {
		name string
		to   allowlist.State
		do   func(t *testing.T, s *allowlist.Service, id int64) error
	}
	ctx := context.Background()
	moves := []move{
		{"enable", allowlist.StateEnabled, func(t *testing.T, s *allowlist.Service, id int64) error {
			_, err := s.EnableTool(ctx, id, enableProof(t, s, id))
			return err
		}},
		{"disable", allowlist.StateDisabled, func(t *testing.T, s *allowlist.Service, id int64) error {
			_, err := s.DisableTool(ctx, id, "owner")
			return err
		}},
		{"withdraw", allowlist.StateWithdrawn, func(t *testing.T, s *allowlist.Service, id int64) error {
			_, err := s.Withdraw(ctx, id, "discovery", "no longer listed")
			return err
		}},
		{"repropose", allowlist.StateProposed, func(t *testing.T, s *allowlist.Service, id int64) error {
			_, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true))
			return err
		}},
	}
	legal := map[[2]allowlist.State]bool{
		{allowlist.StateProposed, allowlist.StateEnabled}:   true,
		{allowlist.StateProposed, allowlist.StateDisabled}:  true,
		{allowlist.StateProposed, allowlist.StateWithdrawn}: true,
		{allowlist.StateEnabled, allowlist.StateDisabled}:   true,
		{allowlist.StateEnabled, allowlist.StateWithdrawn}:  true,
		{allowlist.StateDisabled, allowlist.StateEnabled}:   true,
		{allowlist.StateDisabled, allowlist.StateWithdrawn}: true,
		{allowlist.StateWithdrawn, allowlist.StateProposed}: true,
	}
	for _, from := range states {
		for _, m := range moves {
			t.Run(string(from)+"→"+m.name, func(t *testing.T) {
				s, _ := newService(t)
				row, _, err := s.ProposeTool(ctx, mcpProposal("srv", "tool", true))
				if err != nil {
					t.Fatal(err)
				}
				toState(t, ctx, s, row.ID, from)
				before := eventCount(t, s, row.ID)
				err = m.do(t, s, row.ID)
				got, gerr := s.Get(ctx, row.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				after := eventCount(t, s, row.ID)
				wantLegal := legal[[2]allowlist.State{from, m.to}]
				// Proposing an already proposed row with the same shape is a no-op, not an error.
				if from == allowlist.StateProposed && m.to == allowlist.StateProposed {
					if err != nil || got.State != allowlist.StateProposed || after != before {
						t.Fatalf("re-proposing an unchanged proposed row: err=%v state=%s events %d→%d", err, got.State, before, after)
					}
					return
				}
				// Proposing an enabled or disabled row returns it unchanged: proposing never
				// takes away what the owner decided.
				if m.to == allowlist.StateProposed && !wantLegal {
					if err != nil || got.State != from || after != before {
						t.Fatalf("proposing a %s row: err=%v state=%s events %d→%d", from, err, got.State, before, after)
					}
					return
				}
				if wantLegal {
					if err != nil {
						t.Fatalf("legal move refused: %v", err)
					}
					if got.State != m.to {
						t.Fatalf("state = %s, want %s", got.State, m.to)
					}
					if after != before+1 {
						t.Fatalf("events %d → %d, want exactly one more", before, after)
					}
					return
				}
				if !errors.Is(err, allowlist.ErrIllegalTransition) {
					t.Fatalf("illegal move: err = %v, want ErrIllegalTransition", err)
				}
				if got.State != from {
					t.Fatalf("state changed to %s after a refused move", got.State)
				}
				if after != before {
					t.Fatalf("a refused move left %d events", after-before)
				}
			})
		}
	}
}

func TestEnableNeedsStepUpForThisTool(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	a, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "a", true))
	b, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "b", true))
	cases := []struct {
		name  string
		proof auth.StepUp
	}{
		{"zero proof", auth.StepUp{}},
		{"proof for another tool", enableProof(t, s, b.ID)},
		{"proof for another action", authtest.Proof(t, auth.One(auth.ActionRemovePasskey, a.ID, ""))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.EnableTool(ctx, a.ID, c.proof)
			if !errors.Is(err, auth.ErrStepUpRequired) {
				t.Fatalf("err = %v, want ErrStepUpRequired", err)
			}
			got, _ := s.Get(ctx, a.ID)
			if got.State != allowlist.StateProposed || eventCount(t, s, a.ID) != 1 {
				t.Fatalf("refused enable changed the row: state %s, %d events", got.State, eventCount(t, s, a.ID))
			}
		})
	}
	got, err := s.EnableTool(ctx, a.ID, enableProof(t, s, a.ID))
	if err != nil || got.State != allowlist.StateEnabled || !strings.HasPrefix(got.EnabledBy, "owner (passkey") || got.EnabledAt == nil {
		t.Fatalf("enable with the right proof: %+v, %v", got, err)
	}
}

// TestEnableRefusesAShapeOtherThanShown: the proof names the fingerprint the owner's page
// showed; a row redefined since is refused with a ShapeChangedError carrying the row as it is
// now, nothing changes, and the trail keeps the shape that was shown.
func TestEnableRefusesAShapeOtherThanShown(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	row, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "report", true))
	shown := enableProof(t, s, row.ID) // the owner approves what the page shows
	var redefined allowlist.Tool
	err := s.Update(ctx, func(tx *allowlist.Tx) (err error) {
		redefined, err = tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{
			Fingerprint: "sha256:2", Declared: `{"name":"report","description":"Deletes every report."}`,
			Description: "Deletes every report.", ChangedFields: []string{"description"}, Provenance: "redefined",
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	events := eventCount(t, s, row.ID)
	_, err = s.EnableTool(ctx, row.ID, shown)
	var changed *allowlist.ShapeChangedError
	if !errors.As(err, &changed) || !errors.Is(err, allowlist.ErrShapeChanged) || changed.Shown != "sha256:1" || changed.Tool.Fingerprint != "sha256:2" {
		t.Fatalf("enable of the shape shown after a redefinition: %v", err)
	}
	if got, _ := s.Get(ctx, row.ID); got.State != allowlist.StateProposed || eventCount(t, s, row.ID) != events {
		t.Fatalf("a refused enable changed the row: %+v", got)
	}
	if seen, err := s.DeclaredWhen(ctx, row.ID, "sha256:1"); err != nil || seen != row.Declared {
		t.Fatalf("DeclaredWhen(shown) = %q, %v; want %q", seen, err, row.Declared)
	}
	if seen, _ := s.DeclaredWhen(ctx, row.ID, redefined.Fingerprint); seen != "" {
		t.Fatalf("DeclaredWhen(current) = %q, want \"\"", seen)
	}
	if _, err := s.EnableTool(ctx, row.ID, enableProof(t, s, row.ID)); err != nil {
		t.Fatalf("enable of the shape now shown: %v", err)
	}
}

func TestApprovalDigestCoversWhatIsShown(t *testing.T) {
	local := allowlist.Tool{Name: "restart_router", Cmd: []string{"/usr/bin/restart", "router"}, Scope: allowlist.ScopeLocal}
	base := local.ApprovalDigest()
	if !strings.HasPrefix(base, "sha256:") || len(base) != len("sha256:")+64 {
		t.Fatalf("digest %q", base)
	}
	for name, edit := range map[string]func(*allowlist.Tool){
		"spoken name":     func(t *allowlist.Tool) { t.Name = "reboot_all" },
		"command":         func(t *allowlist.Tool) { t.Cmd = []string{"/usr/bin/restart", "modem"} },
		"description":     func(t *allowlist.Tool) { t.Description = "also wipes" },
		"input schema":    func(t *allowlist.Tool) { t.InputSchema = json.RawMessage(`{"type":"object","required":["x"]}`) },
		"read-only claim": func(t *allowlist.Tool) { t.ReadOnly = true },
	} {
		changed := local
		edit(&changed)
		if changed.ApprovalDigest() == base {
			t.Errorf("a change of the %s keeps the digest", name)
		}
	}
	// Nothing else moves it: the state, the provenance, the time.
	same := local
	same.State, same.Provenance, same.UpdatedAt = allowlist.StateDisabled, "config", time.Now()
	if same.ApprovalDigest() != base {
		t.Error("the digest depends on what the owner approves nothing of")
	}
	mcpRow := allowlist.Tool{Name: "a", Fingerprint: "sha256:abc"}
	if mcpRow.ApprovalDigest() != "sha256:abc" {
		t.Errorf("an MCP row binds to its fingerprint, got %s", mcpRow.ApprovalDigest())
	}
}

func TestDestructiveOnlyRaised(t *testing.T) {
	ctx := context.Background()
	s, store := newService(t)
	row, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "t", false))
	if !row.Destructive {
		t.Fatal("a tool that does not claim read-only must be destructive")
	}
	// The far end now claims read-only: the row follows the claim, but stays destructive.
	p := mcpProposal("srv", "t", true)
	p.Description = "now says it is harmless"
	row, _, err := s.ProposeTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !row.Destructive || !row.ReadOnly {
		t.Fatalf("after a read-only claim: destructive=%v read_only=%v, want true true", row.Destructive, row.ReadOnly)
	}
	toState(t, ctx, s, row.ID, allowlist.StateEnabled)
	row, err = updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
		return tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{Fingerprint: "sha256:2", Declared: "{}", ReadOnly: true})
	})
	if err != nil || !row.Destructive {
		t.Fatalf("redeclare lowered destructive: %+v %v", row, err)
	}
	// Even a direct store write cannot lower it: the database refuses.
	row.Destructive = false
	err = store.Update(ctx, func(tx allowlist.TxStore) error { return tx.UpdateTool(ctx, &row) })
	if err == nil {
		t.Fatal("the database let destructive be lowered")
	}
}

func updateTx(ctx context.Context, s *allowlist.Service, fn func(*allowlist.Tx) (allowlist.Tool, error)) (allowlist.Tool, error) {
	var out allowlist.Tool
	err := s.Update(ctx, func(tx *allowlist.Tx) error {
		var err error
		out, err = fn(tx)
		return err
	})
	return out, err
}

func TestRedeclare(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		from          allowlist.State
		want          allowlist.State
		keepsPrevious bool
	}{
		{allowlist.StateEnabled, allowlist.StateProposed, true},
		{allowlist.StateDisabled, allowlist.StateDisabled, true},
		{allowlist.StateProposed, allowlist.StateProposed, false},
	} {
		t.Run(string(c.from), func(t *testing.T) {
			s, _ := newService(t)
			row, _, _ := s.ProposeTool(ctx, mcpProposal("srv", "t", true))
			toState(t, ctx, s, row.ID, c.from)
			before := eventCount(t, s, row.ID)
			got, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
				return tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{
					Fingerprint: "sha256:2", Declared: `{"name":"t","readOnlyHint":false}`, ReadOnly: false,
					ChangedFields: []string{"readOnlyHint"}, Provenance: "redefined by srv: readOnlyHint changed",
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got.State != c.want || !got.Destructive || got.ReadOnly {
				t.Fatalf("state %s destructive %v read_only %v", got.State, got.Destructive, got.ReadOnly)
			}
			if c.keepsPrevious != (got.PreviousDeclared == row.Declared) {
				t.Fatalf("previous declared = %q", got.PreviousDeclared)
			}
			if diff := cmp.Diff([]string{"readOnlyHint"}, got.ChangedFields); diff != "" {
				t.Fatal(diff)
			}
			if eventCount(t, s, row.ID) != before+1 {
				t.Fatal("redeclare must leave exactly one event")
			}
		})
	}
}

func TestAdoptFingerprintKeepsState(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	p := mcpProposal("srv", "t", true)
	p.Fingerprint, p.Declared = "", ""
	row, _, _ := s.ProposeTool(ctx, p)
	toState(t, ctx, s, row.ID, allowlist.StateEnabled)
	got, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
		return tx.AdoptFingerprint(ctx, row.ID, "sha256:abc", `{"name":"t"}`)
	})
	if err != nil || got.State != allowlist.StateEnabled || got.Fingerprint != "sha256:abc" {
		t.Fatalf("%+v %v", got, err)
	}
	evs, _ := s.Events(ctx, row.ID)
	if last := evs[len(evs)-1]; last.Action != "fingerprint_adopted" {
		t.Fatalf("last event %q", last.Action)
	}
	if _, err := updateTx(ctx, s, func(tx *allowlist.Tx) (allowlist.Tool, error) {
		return tx.AdoptFingerprint(ctx, row.ID, "sha256:other", "{}")
	}); !errors.Is(err, allowlist.ErrIllegalTransition) {
		t.Fatalf("adopting over an existing fingerprint: %v", err)
	}
}

func TestProposeIsIdempotent(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	p := allowlist.Proposal{Name: "hello", Cmd: []string{"/bin/echo", "hi"}, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "cli"}
	a, created, err := s.ProposeTool(ctx, p)
	if err != nil || !created {
		t.Fatalf("first propose: %v created=%v", err, created)
	}
	b, created, err := s.ProposeTool(ctx, p)
	if err != nil || created || b.ID != a.ID {
		t.Fatalf("second propose: id %d vs %d, created=%v, %v", b.ID, a.ID, created, err)
	}
	if n := eventCount(t, s, a.ID); n != 1 {
		t.Fatalf("an unchanged propose wrote events: %d", n)
	}
	if !a.Destructive || a.ReadOnly {
		t.Fatal("a local command promises nothing, so it is destructive")
	}
}

// TestProposeNeverRenamesAnEnabledRow: proposing an enabled command under a new name, or its name
// with another command, changes nothing: the owner enabled that command under that name. Once
// disabled, the command can be proposed under a new name (and enabled again behind a step-up).
func TestProposeNeverRenamesAnEnabledRow(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	p := allowlist.Proposal{Name: "hello", Cmd: []string{"/bin/echo", "hi"}, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "cli"}
	row, _, err := s.ProposeTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if row, err = s.EnableTool(ctx, row.ID, enableProof(t, s, row.ID)); err != nil {
		t.Fatal(err)
	}
	renamed := p
	renamed.Name = "reboot_router"
	other := p
	other.Cmd = []string{"/sbin/reboot"}
	for _, q := range []allowlist.Proposal{renamed, other} {
		_, _, err := s.ProposeTool(ctx, q)
		if !errors.Is(err, allowlist.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("tool %d", row.ID)) && !strings.Contains(err.Error(), fmt.Sprintf("(id %d, local, enabled)", row.ID)) {
			t.Errorf("propose %s %q: %v, want ErrInvalid naming tool %d", q.Name, q.Cmd, err, row.ID)
		}
	}
	if got, _ := s.Get(ctx, row.ID); got.Name != "hello" || got.State != allowlist.StateEnabled || !slices.Equal(got.Cmd, p.Cmd) {
		t.Fatalf("the enabled row changed: %+v", got)
	}
	if rows, _ := s.List(ctx, allowlist.Filter{}); len(rows) != 1 {
		t.Fatalf("%d rows, want the one", len(rows))
	}
	if _, err := s.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.ProposeTool(ctx, renamed); err != nil || got.ID != row.ID || got.Name != "reboot_router" || got.State != allowlist.StateDisabled {
		t.Fatalf("renaming the disabled row: %+v %v", got, err)
	}
}

func TestProposeRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	if _, _, err := s.ProposeTool(ctx, allowlist.Proposal{Name: "x", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    allowlist.Proposal
	}{
		{"no name", allowlist.Proposal{Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal}},
		{"empty cmd", allowlist.Proposal{Name: "a", Scope: allowlist.ScopeLocal}},
		{"local mcp lookalike", allowlist.Proposal{Name: "a", Cmd: []string{"mcp", "srv", "t"}, Scope: allowlist.ScopeLocal}},
		{"mcp scope mismatch", allowlist.Proposal{Name: "a", Cmd: []string{"mcp", "other", "t"}, Scope: "mcp:srv"}},
		{"name taken by another row", allowlist.Proposal{Name: "x", Cmd: []string{"/bin/false"}, Scope: allowlist.ScopeLocal}},
		{"name with spaces", allowlist.Proposal{Name: "a b", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal}},
		{"NUL in argv", allowlist.Proposal{Name: "a", Cmd: []string{"/bin/echo", "a\x00b"}, Scope: allowlist.ScopeLocal}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := s.ProposeTool(ctx, c.p); !errors.Is(err, allowlist.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
	rows, _ := s.List(ctx, allowlist.Filter{})
	if len(rows) != 1 {
		t.Fatalf("refused proposals left rows: %d", len(rows))
	}
}

func TestSyncConfigTools(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	if _, _, err := s.ProposeTool(ctx, allowlist.Proposal{Name: "by_hand", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	if refused, err := s.SyncConfigTools(ctx, []allowlist.LocalTool{{Name: "a", Argv: []string{"/bin/echo", "a"}}, {Name: "b", Argv: []string{"/bin/echo", "b"}}}); err != nil || refused != nil {
		t.Fatal(refused, err)
	}
	if _, err := s.SyncConfigTools(ctx, []allowlist.LocalTool{{Name: "a", Argv: []string{"/bin/echo", "a"}}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.List(ctx, allowlist.Filter{Scope: allowlist.ScopeLocal})
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = string(r.State) + "/" + r.Provenance
	}
	want := map[string]string{
		"by_hand": "proposed/",
		"a":       "proposed/proposed from the config file",
		"b":       "withdrawn/removed from config",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	// Back in the config: proposed again, not enabled.
	if _, err := s.SyncConfigTools(ctx, []allowlist.LocalTool{{Name: "a", Argv: []string{"/bin/echo", "a"}}, {Name: "b", Argv: []string{"/bin/echo", "b"}}}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.List(ctx, allowlist.Filter{Scope: allowlist.ScopeLocal, States: []allowlist.State{allowlist.StateProposed}})
	if len(b) != 3 {
		t.Fatalf("want 3 proposed rows, got %d", len(b))
	}
}

// TestSyncConfigToolsRefusesOneAndKeepsTheRest: a config tool named like an MCP row, withdrawn
// long ago, is refused and named; the other config tools are proposed and the MCP row is left
// as it was, audit trail and all.
func TestSyncConfigToolsRefusesOneAndKeepsTheRest(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t)
	old, _, err := s.ProposeTool(ctx, allowlist.Proposal{Name: "clash", Cmd: []string{"mcp", "srv", "clash"},
		Scope: allowlist.MCPScope("srv"), Source: allowlist.SourceDiscovery, Destructive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Withdraw(ctx, old.ID, "discovery", "the server stopped listing it"); err != nil {
		t.Fatal(err)
	}
	// A config tool that already had a row keeps it, even when its new name is refused.
	if _, err := s.SyncConfigTools(ctx, []allowlist.LocalTool{{Name: "renamed", Argv: []string{"/bin/date"}}}); err != nil {
		t.Fatal(err)
	}
	refused, err := s.SyncConfigTools(ctx, []allowlist.LocalTool{
		{Name: "uptime", Argv: []string{"/usr/bin/uptime"}},
		{Name: "clash", Argv: []string{"/bin/date"}},
	})
	if err != nil {
		t.Fatalf("one refused tool stopped the sync: %v", err)
	}
	if len(refused) != 1 || refused[0].Index != 1 || refused[0].Name != "clash" || !errors.Is(refused[0].Err, allowlist.ErrInvalid) ||
		!strings.Contains(refused[0].Err.Error(), fmt.Sprintf("(id %d, mcp:srv, withdrawn)", old.ID)) {
		t.Fatalf("refused = %+v", refused)
	}
	rows, _ := s.List(ctx, allowlist.Filter{})
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = r.Scope + "/" + string(r.State)
	}
	want := map[string]string{"clash": "mcp:srv/withdrawn", "renamed": "local/proposed", "uptime": "local/proposed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
}

func TestAuditTrailIsAppendOnly(t *testing.T) {
	ctx := context.Background()
	bdb := testdb.Open(t)
	s := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	row, _, err := s.ProposeTool(ctx, mcpProposal("srv", "t", true))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"UPDATE tool_events SET actor = 'someone else'",
		"DELETE FROM tool_events",
		"DELETE FROM tools",
	} {
		if _, err := bdb.ExecContext(ctx, q); err == nil {
			t.Errorf("%s: the database allowed it", q)
		}
	}
	if n := eventCount(t, s, row.ID); n != 1 {
		t.Fatalf("events = %d", n)
	}
}

func BenchmarkPropose(b *testing.B) {
	ctx := context.Background()
	s, _ := newService(b)
	p := mcpProposal("srv", "t", true)
	if _, _, err := s.ProposeTool(ctx, p); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := s.ProposeTool(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
