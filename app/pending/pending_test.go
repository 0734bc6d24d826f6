package pending_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/agents/agentstest"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp/mcptest"
	"maven/app/pending"
	"maven/db"
	"maven/internal/enumtest"
	"maven/internal/testkit/testclock"
)

// deleteTask is the destructive tool of these tests: it deletes a task by id.
var deleteTask = mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task.", Text: "deleted",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string"}},"required":["id"]}`)}

// ha is the client of these tests.
var ha = pending.Client{ID: "ha", Name: "Home Assistant"}

// tasks is a Maven whose server "tasks" offers deleteTask, enabled as tasks_delete_task.
func tasks(t *testing.T, opts agentstest.Options) (*agentstest.World, *mcptest.Scripted, allowlist.Tool) {
	t.Helper()
	s := mcptest.NewScripted(deleteTask)
	srv := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(srv.Close)
	t.Cleanup(s.Close)
	opts.Servers = map[string]config.Server{"tasks": agentstest.HTTPServer(srv.URL)}
	w := agentstest.New(t, opts)
	return w, s, w.Enable(t, "tasks_delete_task")
}

// ask submits a call of row with args from client.
func ask(t *testing.T, w *agentstest.World, client pending.Client, row allowlist.Tool, args map[string]any) (pending.Call, pending.Submitted) {
	t.Helper()
	c, how, err := w.Pending.Submit(context.Background(), pending.Request{Client: client, Row: row, Args: args,
		Absent: []string{"note"}, Why: "it can change things"})
	if err != nil {
		t.Fatal(err)
	}
	return c, how
}

// proof is the owner's step-up approving c as its page shows it now.
func proof(t *testing.T, c pending.Call) auth.StepUp {
	return authtest.Proof(t, auth.One(auth.ActionApproveCall, c.ID, pending.Binding(c)))
}

func TestEveryStateHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "State", pending.States())
	for _, s := range pending.States() {
		if s.Words() == "" {
			t.Errorf("state %q has no words", s)
		}
	}
	if pending.StatePending.Final() || pending.StateRunning.Final() || !pending.StateRan.Final() {
		t.Error("pending and running are not final; ran is")
	}
}

func TestEveryEventHasItsWords(t *testing.T) {
	enumtest.Listed(t, ".", "Event", pending.Events())
	for _, e := range pending.Events() {
		if e.Words() == "" {
			t.Errorf("event %q has no words", e)
		}
	}
	if got := pending.Event("later").Words(); got != "later" {
		t.Errorf("an unknown event reads %q", got)
	}
}

// TestTheBindingNamesTheCallItsShapeItsArgumentsAndItsExpiry: what the step-up names changes
// with the call's id, the row's fingerprint, any argument and the expiry
// (docs/design.md#rule-30), so an approval of one cannot be spent on another.
func TestTheBindingNamesTheCallItsShapeItsArgumentsAndItsExpiry(t *testing.T) {
	base := pending.Call{ID: 7, Fingerprint: "sha256:aa", Args: json.RawMessage(`{"id":12}`), Expires: time.Date(2026, 12, 1, 9, 5, 0, 0, time.UTC)}
	seen := map[string]string{pending.Binding(base): "base"}
	for name, c := range map[string]pending.Call{
		"another id":          {ID: 8, Fingerprint: base.Fingerprint, Args: base.Args, Expires: base.Expires},
		"another fingerprint": {ID: 7, Fingerprint: "sha256:ab", Args: base.Args, Expires: base.Expires},
		"other arguments":     {ID: 7, Fingerprint: base.Fingerprint, Args: json.RawMessage(`{"id":13}`), Expires: base.Expires},
		"another expiry":      {ID: 7, Fingerprint: base.Fingerprint, Args: base.Args, Expires: base.Expires.Add(time.Nanosecond)},
		"the id in the args":  {ID: 71, Fingerprint: "2sha256:aa", Args: base.Args, Expires: base.Expires},
	} {
		b := pending.Binding(c)
		if other, ok := seen[b]; ok {
			t.Errorf("%s binds as %s does", name, other)
		}
		seen[b] = name
	}
	if b := pending.Binding(base); !strings.HasPrefix(b, "sha256:") || len(b) != len("sha256:")+64 {
		t.Errorf("binding %q", b)
	}
}

// TestAnApprovedCallRunsOnceWhenTwoApprovalsRace: two approvals of one call at the same moment
// run the tool once: one transition decides, and the other is told the call no longer waits.
func TestAnApprovedCallRunsOnceWhenTwoApprovalsRace(t *testing.T) {
	w, s, row := tasks(t, agentstest.Options{})
	c, how := ask(t, w, ha, row, map[string]any{"id": 12})
	if how != pending.Created || c.State != pending.StatePending || string(c.Args) != `{"id":12}` {
		t.Fatalf("submitted %+v (%v)", c, how)
	}
	p := proof(t, c)
	var wg sync.WaitGroup
	results := make([]error, 4)
	for i := range results {
		wg.Go(func() { _, results[i] = w.Pending.Approve(context.Background(), c.ID, p) })
	}
	wg.Wait()
	ran := 0
	for _, err := range results {
		switch {
		case err == nil:
			ran++
		case !errors.Is(err, pending.ErrNotPending):
			t.Errorf("an approval failed: %v", err)
		}
	}
	if ran != 1 || s.Calls("delete_task") != 1 {
		t.Fatalf("%d approvals ran it, the server was called %d times", ran, s.Calls("delete_task"))
	}
	got, err := w.Pending.Get(context.Background(), c.ID)
	if err != nil || got.State != pending.StateRan || got.Result == nil || got.Result.Output != "deleted" || got.DecidedBy == "" {
		t.Fatalf("after the run: %+v (%v)", got, err)
	}
}

// TestWhatRunsNothing: a step-up for another pending call, a proof for another action, an
// approval after the call expired, one after its row was redefined, one while locked, a
// denial, and a second approval of a call that ran each run nothing (docs/design.md#rule-31).
func TestWhatRunsNothing(t *testing.T) {
	clock := testclock.New(time.Now())
	w, s, row := tasks(t, agentstest.Options{Pending: pending.Options{Now: clock.Now}})
	ctx := context.Background()
	one, _ := ask(t, w, ha, row, map[string]any{"id": 1})
	two, _ := ask(t, w, ha, row, map[string]any{"id": 2})

	if _, err := w.Pending.Approve(ctx, two.ID, proof(t, one)); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Errorf("a step-up for call %d approving call %d: %v", one.ID, two.ID, err)
	}
	other := authtest.Proof(t, auth.One(auth.ActionEnableTool, two.ID, pending.Binding(two)))
	if _, err := w.Pending.Approve(ctx, two.ID, other); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Errorf("a step-up for enabling a tool: %v", err)
	}
	shifted := two
	shifted.Args = json.RawMessage(`{"id":3}`)
	if _, err := w.Pending.Approve(ctx, two.ID, proof(t, shifted)); !errors.Is(err, auth.ErrStepUpRequired) {
		t.Errorf("a step-up shown other arguments: %v", err)
	}
	w.Lock.Set(true)
	if _, err := w.Pending.Approve(ctx, two.ID, proof(t, two)); !errors.Is(err, pending.ErrLocked) {
		t.Errorf("an approval while locked: %v", err)
	}
	w.Lock.Set(false)
	if c, err := w.Pending.Deny(ctx, two.ID, "owner"); err != nil || c.State != pending.StateDenied {
		t.Errorf("deny: %+v %v", c, err)
	}
	if _, err := w.Pending.Approve(ctx, two.ID, proof(t, two)); !errors.Is(err, pending.ErrNotPending) {
		t.Errorf("an approval after the denial: %v", err)
	}

	clock.Advance(pending.DefaultTTL)
	var np *pending.NotPendingError
	if _, err := w.Pending.Approve(ctx, one.ID, proof(t, one)); !errors.As(err, &np) || np.Call.State != pending.StateExpired {
		t.Errorf("an approval at the expiry: %v", err)
	}
	clock.Set(time.Now())

	three, _ := ask(t, w, ha, row, map[string]any{"id": 3})
	if _, err := w.Pending.Approve(ctx, three.ID, proof(t, three)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Pending.Approve(ctx, three.ID, proof(t, three)); !errors.As(err, &np) || np.Call.State != pending.StateRan {
		t.Errorf("a second approval: %v", err)
	}
	if n := s.Calls("delete_task"); n != 1 {
		t.Fatalf("the server was called %d times, want once (the one approval in time)", n)
	}

	four, _ := ask(t, w, ha, row, map[string]any{"id": 4})
	s.Redefine(mcptest.ToolSpec{Name: "delete_task", Description: "Deletes every task.", Text: "all gone", InputSchema: deleteTask.InputSchema})
	w.Row(t, "tasks_delete_task", func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed })
	if _, err := w.Pending.Approve(ctx, four.ID, proof(t, four)); !errors.As(err, &np) || np.Call.State != pending.StateVoid ||
		!strings.Contains(np.Call.Reason, "redefined") {
		t.Errorf("an approval after a redefinition: %v", err)
	}
	if n := s.Calls("delete_task"); n != 1 {
		t.Fatalf("the server was called %d times", n)
	}
}

// TestAChangeOfTheRowVoidsItsPendingCalls: disabling a row voids its pending calls within a
// moment (allowlist.Service.Changed), saying why; a lock voids nothing.
func TestAChangeOfTheRowVoidsItsPendingCalls(t *testing.T) {
	w, s, row := tasks(t, agentstest.Options{})
	ctx := context.Background()
	c, _ := ask(t, w, ha, row, map[string]any{"id": 1})
	w.Lock.Set(true)
	w.Lock.Set(false)
	if got, _ := w.Pending.Get(ctx, c.ID); got.State != pending.StatePending {
		t.Fatalf("after a lock: %s", got.State)
	}
	if _, err := w.Tools.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	got := waitState(t, w, c.ID, pending.StateVoid)
	if got.Reason != "it was disabled" {
		t.Errorf("voided because %q", got.Reason)
	}
	if s.Calls("delete_task") != 0 {
		t.Error("a voided call ran")
	}
}

// TestIdenticalCallsJoinAndAKeptResultRunsNothingAgain: an identical call while one waits joins
// it; once the call ran, the next identical call gets its result without running it again;
// the one after that asks again. A client holds at most five pending calls; another client
// is not held back by it.
func TestIdenticalCallsJoinAndAKeptResultRunsNothingAgain(t *testing.T) {
	w, s, row := tasks(t, agentstest.Options{})
	ctx := context.Background()
	c, _ := ask(t, w, ha, row, map[string]any{"id": 1})
	if again, how := ask(t, w, ha, row, map[string]any{"id": 1}); how != pending.Joined || again.ID != c.ID {
		t.Fatalf("an identical call: %v, call %d", how, again.ID)
	}
	if other, how := ask(t, w, pending.Client{ID: "claude", Name: "Claude"}, row, map[string]any{"id": 1}); how != pending.Created || other.ID == c.ID {
		t.Fatalf("the same call from another client: %v", how)
	}
	if _, err := w.Pending.Approve(ctx, c.ID, proof(t, c)); err != nil {
		t.Fatal(err)
	}
	kept, how := ask(t, w, ha, row, map[string]any{"id": 1})
	if how != pending.Kept || kept.ID != c.ID || kept.Result == nil || kept.Result.Output != "deleted" {
		t.Fatalf("the call again after it ran: %v %+v", how, kept)
	}
	if _, how := ask(t, w, ha, row, map[string]any{"id": 1}); how != pending.Created {
		t.Fatalf("once collected, the call again: %v", how)
	}
	if n := s.Calls("delete_task"); n != 1 {
		t.Fatalf("the server was called %d times", n)
	}
	for i := 2; i <= 5; i++ {
		ask(t, w, ha, row, map[string]any{"id": i})
	}
	if _, _, err := w.Pending.Submit(ctx, pending.Request{Client: ha, Row: row, Args: map[string]any{"id": 6}}); !errors.Is(err, pending.ErrTooMany) {
		t.Fatalf("a sixth pending call: %v", err)
	}
	if _, how := ask(t, w, ha, row, map[string]any{"id": 5}); how != pending.Joined {
		t.Errorf("an identical call at the limit: %v", how)
	}
}

// TestPendingCallsSurviveARestartAndAnInterruptedRunIsNeverRunAgain: a new service over the
// same database finds the pending call pending, with its expiry; a call a crash left running is
// marked interrupted at the start, and approving it runs nothing.
func TestPendingCallsSurviveARestartAndAnInterruptedRunIsNeverRunAgain(t *testing.T) {
	w, s, row := tasks(t, agentstest.Options{})
	ctx := context.Background()
	waiting, _ := ask(t, w, ha, row, map[string]any{"id": 1})
	crashed, _ := ask(t, w, ha, row, map[string]any{"id": 2})
	// What the approval writes before the run, and nothing after: the daemon died in the run.
	store := db.NewPendingStore(w.DB)
	if _, err := store.Transition(ctx, crashed.ID, []pending.State{pending.StatePending}, pending.Change{State: pending.StateRunning,
		DecidedBy: "owner", DecidedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	restarted, err := pending.New(pending.Deps{Store: store, Rows: w.Tools, Runner: w.Runner, Lock: w.Lock, Notifier: w.Notify,
		Activity: w.Feed, Canonical: func(b []byte) ([]byte, error) { return b, nil }}, pending.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restarted.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := restarted.Get(ctx, waiting.ID)
	if err != nil || got.State != pending.StatePending || !got.Expires.Equal(waiting.Expires) || pending.Binding(got) != pending.Binding(waiting) {
		t.Fatalf("the waiting call after the restart: %+v (%v)", got, err)
	}
	got, err = restarted.Get(ctx, crashed.ID)
	if err != nil || got.State != pending.StateInterrupted {
		t.Fatalf("the call the crash left running: %+v (%v)", got, err)
	}
	if _, err := restarted.Approve(ctx, crashed.ID, proof(t, crashed)); !errors.Is(err, pending.ErrNotPending) {
		t.Errorf("approving an interrupted call: %v", err)
	}
	if n := s.Calls("delete_task"); n != 0 {
		t.Errorf("the server was called %d times", n)
	}
}

// TestTheWordsSayWhatWaitsAndWhere: a pending call's words say what waits for the owner and,
// when no notification was delivered, where; the other states say what came of it.
func TestTheWordsSayWhatWaitsAndWhere(t *testing.T) {
	w, _, row := tasks(t, agentstest.Options{})
	ctx := context.Background()
	c, _ := ask(t, w, ha, row, map[string]any{"id": 12, "note": "old\u200b"})
	c, err := w.Pending.AwaitNotified(ctx, c.ID, 10*time.Second)
	if err != nil || c.Deliveries == nil || c.Delivered() {
		t.Fatalf("deliveries %+v (%v): with no notifier configured none is delivered", c.Deliveries, err)
	}
	// The invisible character is spelled out, as everything from outside Maven is.
	want := "I've asked for your approval on your phone to run tasks delete task with id 12, note old\\u200b; ask me again once you've approved it." +
		" No notification could be delivered, so you may not know: it waits at " + agentstest.Origin + "/approvals/1."
	if got := w.Pending.Words(c); got != want {
		t.Errorf("waiting:\n got %q\nwant %q", got, want)
	}
	for state, says := range map[pending.State]string{
		pending.StateDenied: "You denied", pending.StateExpired: "in time", pending.StateVoid: "no longer stands",
		pending.StateInterrupted: "does not run it again", pending.StateRunning: "is running",
	} {
		c.State = state
		if got := w.Pending.Words(c); !strings.Contains(got, says) || !strings.Contains(got, "tasks delete task") {
			t.Errorf("%s: %q", state, got)
		}
	}
}

// waitState waits up to ten seconds for call id to be in state want.
func waitState(t *testing.T, w *agentstest.World, id int64, want pending.State) pending.Call {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := w.Pending.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == want {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %d is %s, not %s, after 10s", id, c.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAPageReadsOnlyWhatItShows: Page returns the oldest open calls up to its limit, in order,
// past the finished ones, and counts the rest; List returns every one.
func TestAPageReadsOnlyWhatItShows(t *testing.T) {
	w, _, row := tasks(t, agentstest.Options{})
	ctx := context.Background()
	var calls []pending.Call
	for i := range 7 {
		c, _ := ask(t, w, pending.Client{ID: "c" + string(rune('a'+i)), Name: "client"}, row, map[string]any{"id": i})
		calls = append(calls, c)
	}
	if _, err := w.Pending.Deny(ctx, calls[0].ID, "owner"); err != nil {
		t.Fatal(err)
	}
	page, err := w.Pending.Page(ctx, 3)
	if err != nil || len(page.Open) != 3 || page.MoreOpen != 3 || len(page.Recent) != 1 {
		t.Fatalf("a page of 3: %d open, %d more, %d recent (%v)", len(page.Open), page.MoreOpen, len(page.Recent), err)
	}
	for i, c := range page.Open {
		if c.ID != calls[i+1].ID {
			t.Errorf("open call %d is %d, want %d", i, c.ID, calls[i+1].ID)
		}
	}
	if all, err := w.Pending.List(ctx); err != nil || len(all.Open) != 6 || all.MoreOpen != 0 {
		t.Errorf("the list: %d open, %d more (%v)", len(all.Open), all.MoreOpen, err)
	}
}
