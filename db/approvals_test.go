package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"maven/app/approval"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
)

func newApprovals(t *testing.T) *approval.Service {
	t.Helper()
	bdb := newDB(t)
	return approval.NewService(db.NewApprovalStore(bdb), time.Now)
}

func TestApprovalsCheckPendingApprove(t *testing.T) {
	ctx := context.Background()
	svc := newApprovals(t)

	ok, err := svc.Check(ctx, "notes", "notes-server --db x", "sha256:aa")
	if err != nil || ok {
		t.Fatalf("first Check = %v, %v; want not approved", ok, err)
	}
	// Seen again: still one pending row.
	if ok, err := svc.Check(ctx, "notes", "notes-server --db x", "sha256:aa"); err != nil || ok {
		t.Fatalf("second Check = %v, %v", ok, err)
	}
	pending, err := svc.Pending(ctx)
	if err != nil || len(pending) != 1 {
		t.Fatalf("Pending = %+v, %v; want one", pending, err)
	}
	p := pending[0]
	if p.Server != "notes" || p.Display != "notes-server --db x" || p.SeenAt.IsZero() || p.Approved != "" {
		t.Errorf("pending row = %+v", p)
	}

	// Without the right proof nothing is approved.
	for name, proof := range map[string]auth.StepUp{
		"zero":           {},
		"other action":   authtest.Proof(t, auth.One(auth.ActionEnableTool, p.ID, "sha256:aa")),
		"other target":   authtest.Proof(t, auth.One(auth.ActionAddServer, p.ID+1, "")),
		"setting secret": authtest.Proof(t, auth.One(auth.ActionSetSecret, p.ID, "")),
	} {
		if _, err := svc.Approve(ctx, p.ID, proof); !errors.Is(err, auth.ErrStepUpRequired) {
			t.Errorf("%s: Approve = %v, want ErrStepUpRequired", name, err)
		}
	}
	if ok, _ := svc.Check(ctx, "notes", "notes-server --db x", "sha256:aa"); ok {
		t.Fatal("approved without a proof")
	}

	if _, err := svc.Approve(ctx, 999, authtest.Proof(t, auth.One(auth.ActionAddServer, 999, ""))); !errors.Is(err, approval.ErrNotFound) {
		t.Errorf("Approve of a missing row = %v, want ErrNotFound", err)
	}
	server, err := svc.Approve(ctx, p.ID, authtest.Proof(t, auth.One(auth.ActionAddServer, p.ID, "")))
	if err != nil || server != "notes" {
		t.Fatalf("Approve = %q, %v", server, err)
	}
	if ok, err := svc.Check(ctx, "notes", "notes-server --db x", "sha256:aa"); err != nil || !ok {
		t.Fatalf("Check after approval = %v, %v", ok, err)
	}
	c, err := svc.Command(ctx, p.ID)
	if err != nil || c.ApprovedAt.IsZero() || !strings.HasPrefix(c.ApprovedBy, "owner (passkey") {
		t.Errorf("approved row = %+v, %v", c, err)
	}
	if pending, _ := svc.Pending(ctx); len(pending) != 0 {
		t.Errorf("still pending: %+v", pending)
	}

	// A changed command line needs approval again; the approved one stays approved.
	if ok, _ := svc.Check(ctx, "notes", "notes-server --db y", "sha256:bb"); ok {
		t.Fatal("a changed command line was approved")
	}
	// And a third change replaces the second, never-approved one.
	if ok, _ := svc.Check(ctx, "notes", "notes-server --db z", "sha256:cc"); ok {
		t.Fatal("a changed command line was approved")
	}
	pending, _ = svc.Pending(ctx)
	if len(pending) != 1 || pending[0].Display != "notes-server --db z" {
		t.Errorf("Pending = %+v, want only the latest command line", pending)
	}
	// Shown against the one the owner approved, for the diff.
	if len(pending) == 1 && pending[0].Approved != "notes-server --db x" {
		t.Errorf("Pending[0].Approved = %q, want the approved command line", pending[0].Approved)
	}
	if ok, _ := svc.Check(ctx, "notes", "notes-server --db x", "sha256:aa"); !ok {
		t.Error("going back to the approved command line needs approval again")
	}
	// The same digest under another server is another command line.
	if ok, _ := svc.Check(ctx, "other", "notes-server --db x", "sha256:aa"); ok {
		t.Error("another server inherited an approval")
	}
}
