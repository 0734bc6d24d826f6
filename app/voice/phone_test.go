package voice_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"maven/app/agents/agentstest"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp/mcptest"
	"maven/app/pending"
	"maven/app/voice"
)

// TestATurnToARowConfirmedOnThePhoneBecomesAPendingCall: a destructive row set to confirm on
// the phone is never run by a spoken yes (docs/design.md#rule-32): the turn becomes a pending
// call of client "voice" and the reply says it went to the phone; a "yes" finds nothing to
// confirm; once the owner approved it with a passkey, the same turn gets the result, and the
// tool ran once.
func TestATurnToARowConfirmedOnThePhoneBecomesAPendingCall(t *testing.T) {
	s := mcptest.NewScripted(mcptest.ToolSpec{Name: "unlock_door", Description: "Unlocks the front door.", Text: "The door is unlocked."})
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	w := agentstest.New(t, agentstest.Options{Servers: map[string]config.Server{"home": agentstest.HTTPServer(srv.URL)}})
	row := w.Enable(t, "home_unlock_door")
	ctx := context.Background()
	row, err := w.Tools.SetConfirm(ctx, row.ID, allowlist.ConfirmPhone,
		authtest.Proof(t, auth.One(auth.ActionSetConfirm, row.ID, allowlist.ConfirmDigest(row, allowlist.ConfirmPhone))))
	if err != nil {
		t.Fatal(err)
	}
	v := voice.New(voice.Deps{Rows: w.Tools, Binder: w.Manager, Runner: w.Runner, Lock: w.Lock, Activity: w.Feed, Pending: w.Pending},
		voice.Options{})
	t.Cleanup(v.CancelPending)

	r := v.Turn(ctx, voice.Request{Conversation: "c", Text: "home unlock door"})
	if r.Outcome != voice.OutcomeConfirm || r.ExpectsReply ||
		!strings.HasPrefix(r.Speech, "I've asked for your approval on your phone to run home unlock door; ask me again once you've approved it.") {
		t.Fatalf("the turn: %+v", r)
	}
	if r := v.Turn(ctx, voice.Request{Conversation: "c", Text: "yes"}); r.Outcome != voice.OutcomeNoMatch || s.Calls("unlock_door") != 0 {
		t.Fatalf("a yes: %+v; the door was called %d times", r, s.Calls("unlock_door"))
	}
	l, err := w.Pending.List(ctx)
	if err != nil || len(l.Open) != 1 || l.Open[0].Client != pending.Voice {
		t.Fatalf("the pending calls %+v (%v)", l.Open, err)
	}
	c := l.Open[0]
	if _, err := w.Pending.Approve(ctx, c.ID, authtest.Proof(t, auth.One(auth.ActionApproveCall, c.ID, pending.Binding(c)))); err != nil {
		t.Fatal(err)
	}
	if r := v.Turn(ctx, voice.Request{Conversation: "c", Text: "home unlock door"}); r.Outcome != voice.OutcomeRan || r.Speech != "The door is unlocked." {
		t.Fatalf("the turn again after the approval: %+v", r)
	}
	if n := s.Calls("unlock_door"); n != 1 {
		t.Fatalf("the door was called %d times", n)
	}
}
