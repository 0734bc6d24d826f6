package phrases_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/phrases"
	"maven/db"
	"maven/internal/testkit/testdb"
)

const sumSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

type fixture struct {
	rows    *allowlist.Service
	phrases *phrases.Service
	sum     allowlist.Tool // enabled, get-sum on everything
	local   allowlist.Tool // enabled local command
	offered allowlist.Tool // proposed, not enabled
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	bdb := testdb.Open(t)
	f := &fixture{rows: allowlist.NewService(db.NewToolStore(bdb), time.Now)}
	f.phrases = phrases.NewService(db.NewPhrasesStore(bdb), f.rows, time.Now)
	propose := func(p allowlist.Proposal, enable bool) allowlist.Tool {
		row, _, err := f.rows.ProposeTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if enable {
			if row, err = f.rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
				t.Fatal(err)
			}
		}
		return row
	}
	mcpRow := func(tool string) allowlist.Proposal {
		return allowlist.Proposal{Name: "everything_" + tool, Cmd: []string{"mcp", "everything", tool}, Scope: "mcp:everything",
			ReadOnly: true, InputSchema: json.RawMessage(sumSchema), Fingerprint: "sha256:" + tool, Declared: "{}", Source: allowlist.SourceDiscovery}
	}
	f.sum = propose(mcpRow("get-sum"), true)
	f.offered = propose(mcpRow("get-other"), false)
	f.local = propose(allowlist.Proposal{Name: "restart_router", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal}, true)
	return f
}

// phrasesProof is a step-up approving phrases for row as the page showed it.
func phrasesProof(t *testing.T, row allowlist.Tool) auth.StepUp {
	return authtest.Proof(t, auth.One(auth.ActionSetPhrases, row.ID, row.ApprovalDigest()))
}

func TestSaveNeedsAStepUpForThisRowAndTheShapeTheOwnerSaw(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, c := range []struct {
		name  string
		id    int64
		proof auth.StepUp
		want  error
	}{
		{"no step-up", f.sum.ID, auth.StepUp{}, auth.ErrStepUpRequired},
		{"a step-up for enabling", f.sum.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, f.sum.ID, f.sum.ApprovalDigest())), auth.ErrStepUpRequired},
		{"a step-up for another row", f.sum.ID, phrasesProof(t, f.offered), auth.ErrStepUpRequired},
		{"the page showed another shape", f.sum.ID, authtest.Proof(t, auth.One(auth.ActionSetPhrases, f.sum.ID, "sha256:old")), allowlist.ErrShapeChanged},
		{"a row that is not enabled", f.offered.ID, phrasesProof(t, f.offered), phrases.ErrNotPhrasable},
		{"a local command", f.local.ID, phrasesProof(t, f.local), phrases.ErrNotPhrasable},
		{"no such row", 999, authtest.Proof(t, auth.One(auth.ActionSetPhrases, 999, "x")), allowlist.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.phrases.Save(ctx, c.id, "add {a} and {b}", c.proof)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if saved, _ := f.phrases.Phrases(ctx, nil); len(saved) != 0 {
				t.Fatalf("saved anyway: %v", saved)
			}
		})
	}
}

func TestSaveRefusesBadLinesAndKeepsWhatWasThere(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	proof := phrasesProof(t, f.sum)
	if _, err := f.phrases.Save(ctx, f.sum.ID, "add {a} and {b}", proof); err != nil {
		t.Fatal(err)
	}
	_, err := f.phrases.Save(ctx, f.sum.ID, "sum {a} plus {b}\nadd {a} and {c}", proof)
	var e *phrases.Error
	if !errors.As(err, &e) || len(e.Lines) != 1 || e.Lines[0].Line != 2 {
		t.Fatalf("%v", err)
	}
	saved, err := f.phrases.Phrases(ctx, []int64{f.sum.ID})
	if err != nil || !slices.Equal(saved[f.sum.ID].Lines, []string{"add {a} and {b}"}) {
		t.Fatalf("%v %v", saved, err)
	}
}

func TestARedefinitionVoidsThePhrases(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	v0 := f.phrases.Version()
	saved, err := f.phrases.Save(ctx, f.sum.ID, "add {a} and {b}\n\nsum {a} plus {b}", phrasesProof(t, f.sum))
	if err != nil {
		t.Fatal(err)
	}
	if f.phrases.Version() == v0 || saved.Fingerprint != f.sum.Fingerprint || !strings.HasPrefix(saved.SavedBy, "owner (passkey") || len(saved.Lines) != 2 {
		t.Fatalf("%+v", saved)
	}
	row, _ := f.rows.Get(ctx, f.sum.ID)
	if !saved.UsableFor(row) {
		t.Fatal("fresh phrases do not apply")
	}
	err = f.rows.Update(ctx, func(tx *allowlist.Tx) error {
		_, err := tx.Redeclare(ctx, f.sum.ID, allowlist.Redeclaration{Fingerprint: "sha256:redefined", Declared: "{}",
			InputSchema: json.RawMessage(sumSchema), ReadOnly: true, ChangedFields: []string{"description"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Approved again, for the new shape: the phrases were for the old one.
	if _, err := f.rows.EnableTool(ctx, f.sum.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, f.sum.ID, "sha256:redefined"))); err != nil {
		t.Fatal(err)
	}
	row, _ = f.rows.Get(ctx, f.sum.ID)
	all, err := f.phrases.Phrases(ctx, nil)
	if err != nil || all[f.sum.ID].UsableFor(row) {
		t.Fatalf("phrases outlived the redefinition: %+v %v", all, err)
	}
	events, _ := f.rows.Events(ctx, f.sum.ID)
	var actions []string
	for _, e := range events {
		actions = append(actions, e.Action)
	}
	if !slices.Contains(actions, "phrases_set") {
		t.Fatalf("no audit event: %v", actions)
	}
}
