package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp/mcptest"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

// churnEnv is a reconciler on a real database, with a clock the test moves.
type churnEnv struct {
	t     *testing.T
	svc   *allowlist.Service
	rec   *ToolReconciler
	clock *testclock.Clock
}

func newChurnEnv(t *testing.T, b ChurnBudget) *churnEnv {
	t.Helper()
	// Every reading is a moment later, as on a real clock; the tests move it on by hand.
	clock := testclock.Ticking(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Millisecond)
	svc := allowlist.NewService(db.NewToolStore(testdb.Open(t)), clock.Now)
	rec := NewToolReconciler(svc, clock.Now, testLogger(t))
	rec.SetChurnBudget(b)
	return &churnEnv{t: t, svc: svc, rec: rec, clock: clock}
}

// list is a server's list: the named tools, each described as version v.
func list(v int, names ...string) []*sdk.Tool {
	tools := make([]*sdk.Tool, len(names))
	for i, n := range names {
		tools[i] = &sdk.Tool{Name: n, Description: fmt.Sprintf("%s, version %d", n, v),
			InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}
	}
	return tools
}

func (e *churnEnv) reconcile(tools []*sdk.Tool) error {
	return e.rec.Reconcile(context.Background(), "s", tools)
}

func (e *churnEnv) mustReconcile(tools []*sdk.Tool) {
	e.t.Helper()
	if err := e.reconcile(tools); err != nil {
		e.t.Fatal(err)
	}
}

// mustTrip reconciles tools, which must go over the budget, and returns the trip.
func (e *churnEnv) mustTrip(tools []*sdk.Tool) *ChurnError {
	e.t.Helper()
	var ce *ChurnError
	if err := e.reconcile(tools); !errors.As(err, &ce) || !errors.Is(err, ErrTooManyChanges) {
		e.t.Fatalf("Reconcile = %v, want a ChurnError", err)
	}
	return ce
}

// trail is the audit trail and the rows, for comparing before and after a refused list.
func (e *churnEnv) trail() string {
	e.t.Helper()
	evs, err := e.svc.Events(context.Background(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	rows, err := e.svc.List(context.Background(), allowlist.Filter{})
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d %d %s ×%d\n", ev.ID, ev.ToolID, ev.Action, ev.Repeats+1)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %s %s %s\n", r.Name, r.State, r.Fingerprint, r.Description)
	}
	return b.String()
}

// redefinitions counts the redefinitions of each row the trail records: events and repeats.
func (e *churnEnv) redefinitions() map[int64]int {
	e.t.Helper()
	evs, err := e.svc.Events(context.Background(), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]int{}
	for _, ev := range evs {
		if ev.Action == "redefined" {
			out[ev.ToolID] += 1 + ev.Repeats
		}
	}
	return out
}

func TestChurnBudgetRedefinitions(t *testing.T) {
	e := newChurnEnv(t, ChurnBudget{Window: time.Hour, PerTool: 3, MaxCooldown: 24 * time.Hour})
	e.mustReconcile(list(0, "a", "b"))
	rows, _ := e.svc.List(context.Background(), allowlist.Filter{})
	if _, err := e.svc.EnableTool(context.Background(), rows[0].ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, rows[0].ID, rows[0].ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= 3; v++ {
		e.mustReconcile(list(v, "a", "b"))
	}
	// Three redefinitions of each tool, each recorded: one event, two repeats.
	evs, _ := e.svc.Events(context.Background(), 0)
	if len(evs) != 2+1+2 { // proposed ×2, enabled, redefined ×2
		t.Fatalf("%d events:\n%s", len(evs), e.trail())
	}
	for id, n := range e.redefinitions() {
		if n != 3 {
			t.Errorf("tool %d: %d redefinitions recorded, want 3\n%s", id, n, e.trail())
		}
	}

	before := e.trail()
	ce := e.mustTrip(list(4, "a", "b"))
	if ce.Cooldown != time.Hour || !strings.Contains(ce.Detail, `"a" changed 4 times`) {
		t.Errorf("trip %+v", ce)
	}
	if after := e.trail(); after != before {
		t.Fatalf("the list that went over the budget changed something:\nbefore\n%s\nafter\n%s", before, after)
	}
	// During the cooldown every list is refused, whatever it says.
	e.clock.Advance(59 * time.Minute)
	e.mustTrip(list(3, "a", "b"))
	e.mustTrip(nil)
	if after := e.trail(); after != before {
		t.Fatalf("a list during the cooldown changed something:\n%s", after)
	}

	// After it, a new window and a new event per tool; going over again right away doubles the
	// cooldown.
	e.clock.Advance(time.Minute)
	e.mustReconcile(list(5, "a", "b"))
	e.mustReconcile(list(6, "a", "b"))
	e.mustReconcile(list(7, "a", "b"))
	if ce := e.mustTrip(list(8, "a", "b")); ce.Cooldown != 2*time.Hour {
		t.Errorf("a second trip in a row: cooldown %s, want 2h", ce.Cooldown)
	}
	for id, n := range e.redefinitions() {
		if n != 6 {
			t.Errorf("tool %d: %d redefinitions recorded, want 6\n%s", id, n, e.trail())
		}
	}
	// A window that closes without a trip starts the cooldowns over.
	e.clock.Advance(2 * time.Hour)
	e.mustReconcile(list(9, "a", "b"))
	e.clock.Advance(time.Hour)
	for v := 10; v <= 12; v++ {
		e.mustReconcile(list(v, "a", "b"))
	}
	if ce := e.mustTrip(list(13, "a", "b")); ce.Cooldown != time.Hour {
		t.Errorf("a trip after a quiet window: cooldown %s, want 1h", ce.Cooldown)
	}
	// Two events per window and tool, for four windows of redefinitions: never one per list.
	evs, _ = e.svc.Events(context.Background(), 0)
	if len(evs) != 2+1+4*2 {
		t.Errorf("%d events, want %d:\n%s", len(evs), 2+1+4*2, e.trail())
	}
}

func TestChurnBudgetNewNames(t *testing.T) {
	e := newChurnEnv(t, ChurnBudget{Window: time.Hour, PerTool: 10, NewNames: 5})
	keep := []string{"keep"}
	names := func(prefix string, n int) []string {
		out := append([]string(nil), keep...)
		for i := range n {
			out = append(out, fmt.Sprintf("%s%d", prefix, i))
		}
		return out
	}
	// The first listing of a server is free, however long.
	e.mustReconcile(list(0, names("a", 7)...))
	rows, _ := e.svc.List(context.Background(), allowlist.Filter{})
	var keepRow allowlist.Tool
	for _, r := range rows {
		if r.RemoteName() == "keep" {
			keepRow = r
		}
	}
	keepID := keepRow.ID
	if _, err := e.svc.EnableTool(context.Background(), keepID, authtest.Proof(t, auth.One(auth.ActionEnableTool, keepID, keepRow.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	// Eight tools when the window opens: eight new names are allowed, not five.
	e.mustReconcile(list(0, names("b", 7)...))
	before := e.trail()
	ce := e.mustTrip(list(0, names("c", 7)...))
	if !strings.Contains(ce.Detail, "14 new tool names") || !strings.Contains(ce.Detail, "at most 8") {
		t.Errorf("trip %+v", ce)
	}
	if after := e.trail(); after != before {
		t.Fatalf("the list that went over the budget changed something:\n%s", after)
	}
	rows, _ = e.svc.List(context.Background(), allowlist.Filter{})
	if len(rows) != 15 {
		t.Errorf("%d rows, want the first listing's 8 and 7 renames", len(rows))
	}
	// Nothing the owner approved is withdrawn by the trip.
	if row, err := e.svc.Get(context.Background(), keepID); err != nil || row.State != allowlist.StateEnabled {
		t.Errorf("the approved tool: %+v, %v", row, err)
	}
}

// TestChurnBudgetStopsScriptedAttackers: two real stdio servers (scripted-mcp) churn their 20
// tools every 200 ms, one by redefining them, one by renaming them. Each goes over its budget
// within seconds, is failed with a plain reason and not dialled again, and what they wrote is
// bounded: the redefiner's 20 rows with at most one redefinition event each, the renamer's rows
// at most its first listing and one allowance of new names.
func TestChurnBudgetStopsScriptedAttackers(t *testing.T) {
	const tools, perTool, newNames = 20, 4, 20
	svc := allowlist.NewService(db.NewToolStore(testdb.Open(t)), time.Now)
	rec := NewToolReconciler(svc, time.Now, testLogger(t))
	rec.SetChurnBudget(ChurnBudget{Window: time.Hour, PerTool: perTool, NewNames: newNames})
	servers := map[string]config.Server{}
	for name, flag := range map[string]string{"redefiner": "-redefine-every", "renamer": "-rename-every"} {
		specs := make([]mcptest.ToolSpec, tools)
		for i := range specs {
			specs[i] = mcptest.ToolSpec{Name: fmt.Sprintf("tool%d", i), Description: "A tool.",
				InputSchema: json.RawMessage(`{"type":"object"}`)}
		}
		srv := newStdioServer(t, specs...)
		servers[name] = config.Server{Type: config.TransportStdio, Command: scriptedBinary,
			Args: []string{"-pid", srv.pid, flag, "200ms", srv.tools}}
	}
	opts := fastOptions()
	opts.RefreshGap = 100 * time.Millisecond
	m := startManager(t, servers, rec, opts)
	for name := range servers {
		waitFor(t, 30*time.Second, name+" failed for changing its tools too often", func() bool {
			st := status(m, name)
			return st.State == StateFailed && strings.Contains(st.LastError, "changes its tools too often")
		})
		t.Logf("%s: %s", name, status(m, name).LastError)
	}
	m.Close()

	count := func(server string) (rows, events int, redefinitions map[int64]int) {
		rs, err := svc.List(context.Background(), allowlist.Filter{Scope: allowlist.MCPScope(server)})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[int64]bool{}
		for _, r := range rs {
			ids[r.ID] = true
		}
		evs, err := svc.Events(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		redefinitions = map[int64]int{}
		for _, ev := range evs {
			if !ids[ev.ToolID] {
				continue
			}
			events++
			if ev.Action == "redefined" {
				redefinitions[ev.ToolID] += 1 + ev.Repeats
			}
		}
		return len(rs), events, redefinitions
	}
	rows, events, redefs := count("redefiner")
	t.Logf("redefiner: %d rows, %d events, %v", rows, events, redefs)
	if rows != tools || events > 2*tools {
		t.Errorf("redefiner: %d rows and %d events, want %d rows and at most one proposal and one redefinition event each", rows, events, tools)
	}
	for id, n := range redefs {
		if n > perTool {
			t.Errorf("redefiner: tool %d redefined %d times, over the budget of %d", id, n, perTool)
		}
	}
	rows, events, _ = count("renamer")
	t.Logf("renamer: %d rows, %d events", rows, events)
	// Each row is proposed once and withdrawn at most once (a vanished tool changes once).
	if rows > tools+newNames || events > 2*rows {
		t.Errorf("renamer: %d rows and %d events, want at most %d rows and two events each", rows, events, tools+newNames)
	}
	// The reconciler keeps refusing them until the cooldown is over.
	for name := range servers {
		if err := rec.Reconcile(context.Background(), name, nil); !errors.Is(err, ErrTooManyChanges) {
			t.Errorf("%s: Reconcile during the cooldown = %v", name, err)
		}
	}
}

// TestSupervisorWaitsOutTheCooldown: a server whose list the reconciler refuses for churning is
// failed with the reason and its session closed; a wake (an unlock, an approval) does not end
// the wait; once the cooldown is over it is dialled and listed again.
func TestSupervisorWaitsOutTheCooldown(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	var mu sync.Mutex
	refuse := true
	const cooldown = 1500 * time.Millisecond
	rec.fail = func(server string) error {
		mu.Lock()
		defer mu.Unlock()
		if !refuse {
			return nil
		}
		refuse = false
		return &ChurnError{Server: server, Detail: "tool \"echo\" changed 11 times within 1h0m0s",
			Cooldown: cooldown, Until: time.Now().Add(cooldown)}
	}
	m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
	start := time.Now()
	waitState(t, m, "s", StateFailed, 10*time.Second)
	st := status(m, "s")
	if !strings.Contains(st.LastError, "changes its tools too often") || !strings.Contains(st.LastError, `"echo" changed 11 times`) {
		t.Errorf("LastError = %q", st.LastError)
	}
	if _, err := m.CallTool(context.Background(), "s", "echo", nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool during the cooldown: %v, want ErrNotConnected", err)
	}
	waitFor(t, 5*time.Second, "the session to close", func() bool { return scripted.Sessions() == 0 })
	m.Wake("s")
	waitFor(t, 10*time.Second, "a second list after the cooldown", func() bool { return rec.count("s") >= 2 })
	if waited := time.Since(start); waited < cooldown-100*time.Millisecond {
		t.Errorf("listed again after %s, before the cooldown of %s was over", waited, cooldown)
	}
	waitState(t, m, "s", StateConnected, 10*time.Second)
}
