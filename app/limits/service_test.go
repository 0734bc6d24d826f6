package limits_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
	"maven/db"
	"maven/internal/testkit/testdb"
)

type fixture struct {
	rows    *allowlist.Service
	limits  *limits.Service
	thermo  allowlist.Tool // enabled, the thermostat schema
	offered allowlist.Tool // proposed
	local   allowlist.Tool // an enabled local command
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	bdb := testdb.Open(t)
	f := &fixture{rows: allowlist.NewService(db.NewToolStore(bdb), time.Now)}
	f.limits = limits.NewService(db.NewLimitsStore(bdb), f.rows, time.Now)
	propose := func(p allowlist.Proposal, enable bool) allowlist.Tool {
		row, _, err := f.rows.ProposeTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if enable {
			row = f.enable(t, row)
		}
		return row
	}
	mcpRow := func(tool string) allowlist.Proposal {
		return allowlist.Proposal{Name: "home_" + tool, Cmd: []string{"mcp", "home", tool}, Scope: "mcp:home",
			InputSchema: json.RawMessage(thermostat), Fingerprint: "sha256:" + tool, Declared: "{}", Source: allowlist.SourceDiscovery}
	}
	f.thermo = propose(mcpRow("set_temperature"), true)
	f.offered = propose(mcpRow("other"), false)
	f.local = propose(allowlist.Proposal{Name: "restart_router", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal}, true)
	return f
}

func (f *fixture) enable(t *testing.T, row allowlist.Tool) allowlist.Tool {
	t.Helper()
	row, err := f.rows.EnableTool(context.Background(), row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// limitsProof is a step-up approving set on row as the page showed it.
func limitsProof(t *testing.T, row allowlist.Tool, set limits.Set) auth.StepUp {
	t.Helper()
	d, err := limits.Digest(row.ApprovalDigest(), set)
	if err != nil {
		t.Fatal(err)
	}
	return authtest.Proof(t, auth.One(auth.ActionSetLimits, row.ID, d))
}

// redefine has the far end redefine row to fingerprint.
func (f *fixture) redefine(t *testing.T, row allowlist.Tool, fingerprint string) allowlist.Tool {
	t.Helper()
	var out allowlist.Tool
	err := f.rows.Update(context.Background(), func(tx *allowlist.Tx) (err error) {
		out, err = tx.Redeclare(context.Background(), row.ID, allowlist.Redeclaration{Fingerprint: fingerprint, Declared: "{}",
			InputSchema: json.RawMessage(thermostat), ChangedFields: []string{"description"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const warm = `{"properties":{"temperature":{"minimum":17,"maximum":23}},"run_without_asking":true}`

// TestSaveNeedsAStepUpNamingTheseLimits: limits are saved only with a step-up for set_limits
// on the row whose digest names the fingerprint shown and exactly these limits; anything else
// saves nothing.
func TestSaveNeedsAStepUpNamingTheseLimits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s := set(t, warm)
	other := set(t, `{"properties":{"temperature":{"minimum":17,"maximum":30}},"run_without_asking":true}`)
	for _, c := range []struct {
		name  string
		id    int64
		shown string
		proof auth.StepUp
		want  error
	}{
		{"no step-up", f.thermo.ID, f.thermo.Fingerprint, auth.StepUp{}, auth.ErrStepUpRequired},
		{"a step-up for phrases", f.thermo.ID, f.thermo.Fingerprint, authtest.Proof(t, auth.One(auth.ActionSetPhrases, f.thermo.ID, f.thermo.Fingerprint)), auth.ErrStepUpRequired},
		{"a step-up for other limits", f.thermo.ID, f.thermo.Fingerprint, limitsProof(t, f.thermo, other), auth.ErrStepUpRequired},
		{"a step-up for the fingerprint alone", f.thermo.ID, f.thermo.Fingerprint, authtest.Proof(t, auth.One(auth.ActionSetLimits, f.thermo.ID, f.thermo.Fingerprint)), auth.ErrStepUpRequired},
		{"the page showed another shape", f.thermo.ID, "sha256:old", limitsProof(t, f.thermo, s), allowlist.ErrShapeChanged},
		{"a row not enabled", f.offered.ID, f.offered.Fingerprint, limitsProof(t, f.offered, s), limits.ErrNotLimitable},
		{"a local command", f.local.ID, f.local.ApprovalDigest(), limitsProof(t, f.local, s), limits.ErrNotLimitable},
		{"no such row", 999, "x", authtest.Proof(t, auth.One(auth.ActionSetLimits, 999, "x")), allowlist.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := f.limits.Save(ctx, c.id, c.shown, s, c.proof); !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
	saved, err := f.limits.Limits(ctx, nil)
	if err != nil || len(saved) != 0 {
		t.Fatalf("after refusals: %v %v", saved, err)
	}
	bad := set(t, `{"properties":{"temperature":{"minimum":0}}}`)
	var lerr *limits.Error
	if _, err := f.limits.Save(ctx, f.thermo.ID, f.thermo.Fingerprint, bad, limitsProof(t, f.thermo, bad)); !errors.As(err, &lerr) {
		t.Errorf("limits the schema contradicts: %v", err)
	}

	changed := f.limits.Changed()
	got, err := f.limits.Save(ctx, f.thermo.ID, f.thermo.Fingerprint, s, limitsProof(t, f.thermo, s))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	default:
		t.Error("a save does not close Changed")
	}
	if got.Fingerprint != f.thermo.Fingerprint || got.SavedBy == "" || !got.InForce(f.thermo) {
		t.Errorf("saved %+v", got)
	}
	events, err := f.rows.Events(ctx, f.thermo.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Action != "limits_set" || !strings.Contains(string(last.Detail), `"maximum":23`) || !strings.Contains(string(last.Detail), f.thermo.Fingerprint) {
		t.Errorf("the audit trail ends with %s %s", last.Action, last.Detail)
	}
}

// TestARedefinitionVoidsTheLimits: once the far end redefines the row, its limits and the
// choice to run unasked are void; enabling the new shape starts with none; and a return to the
// shape they were saved for does not bring them back either. A save behind a new step-up does.
func TestARedefinitionVoidsTheLimits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s := set(t, warm)
	if _, err := f.limits.Save(ctx, f.thermo.ID, f.thermo.Fingerprint, s, limitsProof(t, f.thermo, s)); err != nil {
		t.Fatal(err)
	}
	outside := map[string]any{"temperature": 30.0}
	if err := f.limits.Check(ctx, f.thermo, outside); !errors.Is(err, limits.ErrOutside) {
		t.Fatalf("before the redefinition: %v", err)
	}
	in, err := f.limits.InForce(ctx, []allowlist.Tool{f.thermo})
	if err != nil || in[f.thermo.ID] == nil || !in[f.thermo.ID].Set.RunUnasked {
		t.Fatalf("in force: %v %v", in, err)
	}

	changed := f.redefine(t, f.thermo, "sha256:changed")
	reenabled := f.enable(t, changed)
	if err := f.limits.Check(ctx, reenabled, outside); err != nil {
		t.Errorf("the redefined row, enabled again, keeps the limits: %v", err)
	}
	back := f.enable(t, f.redefine(t, reenabled, f.thermo.Fingerprint))
	if back.Fingerprint != f.thermo.Fingerprint {
		t.Fatal("the row did not return to its first shape")
	}
	if in, err := f.limits.InForce(ctx, []allowlist.Tool{back}); err != nil || in[back.ID] != nil {
		t.Errorf("back to the shape they were saved for, the limits came back: %v %v", in, err)
	}
	saved, err := f.limits.Limits(ctx, []int64{back.ID})
	if err != nil || !saved[back.ID].Void {
		t.Errorf("the saved limits are not void: %+v %v", saved, err)
	}

	if _, err := f.limits.Save(ctx, back.ID, back.Fingerprint, s, limitsProof(t, back, s)); err != nil {
		t.Fatal(err)
	}
	if err := f.limits.Check(ctx, back, outside); !errors.Is(err, limits.ErrOutside) {
		t.Errorf("saved again: %v", err)
	}
}

// TestLimitsOfADisabledRowWaitForIt: disabling is not a redefinition: the limits are not in
// force while the row is disabled, and are again once the same shape is enabled.
func TestLimitsOfADisabledRowWaitForIt(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	s := set(t, warm)
	if _, err := f.limits.Save(ctx, f.thermo.ID, f.thermo.Fingerprint, s, limitsProof(t, f.thermo, s)); err != nil {
		t.Fatal(err)
	}
	disabled, err := f.rows.DisableTool(ctx, f.thermo.ID, "owner")
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := f.limits.InForce(ctx, []allowlist.Tool{disabled}); in[disabled.ID] != nil {
		t.Error("in force on a disabled row")
	}
	again := f.enable(t, disabled)
	if err := f.limits.Check(ctx, again, map[string]any{"temperature": 30.0}); !errors.Is(err, limits.ErrOutside) {
		t.Errorf("enabled again in the same shape: %v", err)
	}
}
