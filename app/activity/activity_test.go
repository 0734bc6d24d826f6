package activity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/approval"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

type feed struct {
	db    *bun.DB
	rows  *allowlist.Service
	log   *activity.Log
	clock *testclock.Clock
}

func newFeed(t *testing.T) *feed {
	t.Helper()
	bdb := testdb.Open(t)
	clock := testclock.New(time.Date(2026, 12, 13, 9, 0, 0, 0, time.UTC))
	return &feed{db: bdb, rows: allowlist.NewService(db.NewToolStore(bdb), clock.Now),
		log: activity.New(db.NewActivityStore(bdb), clock.Now), clock: clock}
}

func (f *feed) all(t *testing.T, filter activity.Filter) []activity.Entry {
	t.Helper()
	filter.Limit = activity.MaxLimit
	p, err := f.log.Query(context.Background(), filter)
	if err != nil {
		t.Fatal(err)
	}
	return p.Entries
}

func describe(es []activity.Entry) string {
	var parts []string
	for _, e := range es {
		part := e.Action
		for _, s := range []string{e.Tool, e.Outcome} {
			if s != "" {
				part += ":" + s
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}

func TestTheFeedHoldsEveryKindOfEvent(t *testing.T) {
	ctx := context.Background()
	f := newFeed(t)
	row, _, err := f.rows.ProposeTool(ctx, allowlist.Proposal{Name: "restart_router", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.rows.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	turn := activity.Event{Actor: "voice", Action: activity.ActionVoiceTurn, ToolID: row.ID, Tool: row.Name, Outcome: "ran",
		Detail: map[string]any{"utterance": "restart router"}}
	noMatch := activity.Event{Actor: "voice", Action: activity.ActionVoiceTurn, Outcome: "no_match",
		Detail: map[string]any{"utterance": "open the pod bay doors", "user_id": ""}}
	if err := f.log.Append(ctx, turn, noMatch); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rows.DisableTool(ctx, row.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	// A stdio command line approved behind a step-up reaches the feed through its table.
	commands := approval.NewService(db.NewApprovalStore(f.db), f.clock.Now)
	if _, err := commands.Check(ctx, "memory", "node server-memory", "sha256:abc"); err != nil {
		t.Fatal(err)
	}
	pending, _ := commands.Pending(ctx)
	if _, err := commands.Approve(ctx, pending[0].ID, authtest.Proof(t, auth.One(auth.ActionAddServer, pending[0].ID, ""))); err != nil {
		t.Fatal(err)
	}
	locks := f.log.NewLockRecorder(true, slog.New(slog.DiscardHandler))
	locks.Set(false)
	locks.Set(false) // the vault's unlock hooks also run when a secret is set: not a new unlock
	locks.Set(true)
	locks.Set(true)

	got := f.all(t, activity.Filter{})
	want := "locked unlocked command_approved disabled:restart_router voice_turn:no_match voice_turn:restart_router:ran enabled:restart_router proposed:restart_router"
	if describe(got) != want {
		t.Fatalf("feed:\n got %s\nwant %s", describe(got), want)
	}
	var d map[string]any
	if err := json.Unmarshal(got[4].Detail, &d); err != nil || d["utterance"] != "open the pod bay doors" || d["user_id"] != nil {
		t.Fatalf("no_match detail %s", got[4].Detail)
	}
	if err := json.Unmarshal(got[2].Detail, &d); err != nil || d["server"] != "memory" || d["command"] != "node server-memory" {
		t.Fatalf("approval detail %s", got[2].Detail)
	}
	if got[5].ToolID != row.ID || got[5].Actor != "voice" {
		t.Fatalf("%+v", got[5])
	}
	// The feed is append-only, like the audit trail it copies.
	if _, err := f.db.ExecContext(ctx, "UPDATE activity SET actor = 'x'"); err == nil {
		t.Fatal("the feed was rewritten")
	}
	if _, err := f.db.ExecContext(ctx, "DELETE FROM activity"); err == nil {
		t.Fatal("the feed was deleted")
	}
}

// TestVoiceEventsOfTheAuditTrailReadAsTurns: before the feed, voice turns were row events
// named voice_<outcome>; the feed reads them, and any such event, as voice turns.
func TestVoiceEventsOfTheAuditTrailReadAsTurns(t *testing.T) {
	ctx := context.Background()
	f := newFeed(t)
	row, _, err := f.rows.ProposeTool(ctx, allowlist.Proposal{Name: "restart_router", Cmd: []string{"/bin/true"}, Scope: allowlist.ScopeLocal})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(ctx, `INSERT INTO tool_events (tool_id, at, actor, action, detail)
		VALUES (?, '2026-12-01T10:00:00.000000000Z', 'voice', 'voice_needs_args', '{"utterance":"restart router now"}')`, row.ID); err != nil {
		t.Fatal(err)
	}
	got := f.all(t, activity.Filter{Outcome: "needs_args"})
	if len(got) != 1 || got[0].Action != activity.ActionVoiceTurn || got[0].Tool != "restart_router" || got[0].ToolID != row.ID {
		t.Fatalf("%+v", got)
	}
}

// TestTheFeedKeepsTheNameAnEventHappenedUnder: a proposal renames a local command that is not
// enabled; the feed, which copies row events after their commit, names each event with the
// name the row had when it happened.
func TestTheFeedKeepsTheNameAnEventHappenedUnder(t *testing.T) {
	ctx := context.Background()
	f := newFeed(t)
	p := allowlist.Proposal{Name: "uptime", Cmd: []string{"/bin/date"}, Scope: allowlist.ScopeLocal}
	if _, _, err := f.rows.ProposeTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Name = "clock"
	if _, _, err := f.rows.ProposeTool(ctx, p); err != nil {
		t.Fatal(err)
	}
	if got, want := describe(f.all(t, activity.Filter{})), "updated:clock proposed:uptime"; got != want {
		t.Fatalf("feed: got %s, want %s", got, want)
	}
}

func TestABatchIsWrittenWholeOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	f := newFeed(t)
	ok := activity.Event{Actor: "voice", Action: activity.ActionVoiceTurn, Outcome: "no_match"}
	if err := f.log.Append(ctx, ok, activity.Event{Actor: "voice", Action: activity.ActionVoiceTurn, ToolID: 424242, Outcome: "ran"}); err == nil {
		t.Fatal("an event of a row that does not exist was appended")
	}
	if got := f.all(t, activity.Filter{}); len(got) != 0 {
		t.Fatalf("half a batch was kept: %+v", got)
	}
}

func TestPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	f := newFeed(t)
	outcomes := []string{"ran", "no_match", "ran", "error", "no_match"}
	for i := range 25 {
		if i == 20 {
			f.clock.Advance(24 * time.Hour) // the last five happen the next day
		}
		if err := f.log.Append(ctx, activity.Event{Actor: "voice", Action: activity.ActionVoiceTurn, Outcome: outcomes[i%5], Detail: map[string]any{"n": i}}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []int64
	filter := activity.Filter{Limit: 10}
	for pages := 0; ; pages++ {
		p, err := f.log.Query(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			if len(seen) > 0 && e.ID >= seen[len(seen)-1] {
				t.Fatalf("not newest first: %d after %d", e.ID, seen[len(seen)-1])
			}
			seen = append(seen, e.ID)
		}
		if p.Next == 0 {
			if pages != 2 || len(p.Entries) != 5 {
				t.Fatalf("last page %d with %d entries", pages, len(p.Entries))
			}
			break
		}
		filter.Before = p.Next
	}
	if len(seen) != 25 {
		t.Fatalf("paged through %d entries", len(seen))
	}
	if n := len(f.all(t, activity.Filter{Outcome: "no_match"})); n != 10 {
		t.Fatalf("no_match: %d", n)
	}
	day2 := activity.Filter{}.Day(f.clock.Now().In(time.FixedZone("UTC+2", 2*3600)))
	if n := len(f.all(t, day2)); n != 5 {
		t.Fatalf("the second day: %d", n)
	}
	if n := len(f.all(t, activity.Filter{Outcome: "ran", Since: f.clock.Now().Add(-time.Hour)})); n != 2 {
		t.Fatalf("ran on the second day: %d", n)
	}
	for _, bad := range []activity.Filter{{Limit: -1}, {Before: -3}, {Since: f.clock.Now(), Until: f.clock.Now().Add(-time.Second)}} {
		if _, err := f.log.Query(ctx, bad); err == nil {
			t.Errorf("%+v was accepted", bad)
		}
	}
}

func TestWatchServersRecordsChangesNotRetries(t *testing.T) {
	f := newFeed(t)
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{})
	states := make(chan []activity.ServerState, 1)
	current := []activity.ServerState{{Name: "vikunja", State: "connecting"}}
	snapshot := func() []activity.ServerState {
		select {
		case current = <-states:
		default:
		}
		return current
	}
	done := make(chan struct{})
	go func() {
		f.log.WatchServers(ctx, changes, snapshot, slog.New(slog.DiscardHandler))
		close(done)
	}()
	changes <- struct{}{} // taken once the watcher read the states it starts from
	// The states as startActivity gives them (cmd/maven/activity.go): recorded, so the retries
	// of a server that is down are one state.
	for _, st := range []mcp.State{mcp.StateConnected, mcp.StateBackoff, mcp.StateConnecting, mcp.StateBackoff, mcp.StateConnected, mcp.StateConnected} {
		states <- []activity.ServerState{{Name: "vikunja", State: string(st.Recorded()), LastError: "refused"}}
		changes <- struct{}{}
	}
	changes <- struct{}{} // the watcher has read every state before it takes this one
	cancel()
	<-done
	got := f.all(t, activity.Filter{Action: activity.ActionServerState})
	var tos []string
	for _, e := range got {
		var d struct{ Server, From, To string }
		if err := json.Unmarshal(e.Detail, &d); err != nil || d.Server != "vikunja" {
			t.Fatalf("%s", e.Detail)
		}
		tos = append(tos, d.From+"→"+d.To)
	}
	slices.Reverse(tos) // the feed is newest first
	if want := "connecting→connected connected→connecting connecting→connected"; strings.Join(tos, " ") != want {
		t.Fatalf("got %q (newest first), want %q", tos, want)
	}
}

// writeCounter counts the store's writes.
type writeCounter struct {
	activity.Store
	writes atomic.Int64
}

func (w *writeCounter) AppendActivity(ctx context.Context, entries []*activity.Entry) error {
	w.writes.Add(1)
	return w.Store.AppendActivity(ctx, entries)
}

// TestWatchServersRecordsASnapshotInOneWrite checks that the servers a lock takes to locked at
// once are recorded in one write, not one each: a hundred transactions kept the database's
// writer, and the unlock that follows, waiting.
func TestWatchServersRecordsASnapshotInOneWrite(t *testing.T) {
	f := newFeed(t)
	store := &writeCounter{Store: db.NewActivityStore(f.db)}
	feed := activity.New(store, f.clock.Now)
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan struct{})
	var mu sync.Mutex
	current := make([]activity.ServerState, 100)
	for i := range current {
		current[i] = activity.ServerState{Name: fmt.Sprintf("s%d", i), State: "connecting"}
	}
	snapshot := func() []activity.ServerState {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(current)
	}
	done := make(chan struct{})
	go func() {
		feed.WatchServers(ctx, changes, snapshot, slog.New(slog.DiscardHandler))
		close(done)
	}()
	changes <- struct{}{} // taken once the watcher read the states it starts from
	mu.Lock()
	for i := range current {
		current[i].State = "locked"
	}
	mu.Unlock()
	changes <- struct{}{}
	changes <- struct{}{} // the watcher has recorded the change before it takes this one
	cancel()
	<-done
	if n := len(f.all(t, activity.Filter{Action: activity.ActionServerState})); n != 100 {
		t.Fatalf("%d servers' changes recorded, want 100", n)
	}
	if n := store.writes.Load(); n != 1 {
		t.Fatalf("%d writes for one snapshot's changes, want 1", n)
	}
}

// TestABatcherWritesOffTheCallersPathInOrder: events appended to a Batcher one call at a time
// reach the feed in order, those that came during a write in the next, each with the time its
// caller gave it; Close writes what is still queued, and what is appended after Close is
// written at once.
func TestABatcherWritesOffTheCallersPathInOrder(t *testing.T) {
	f := newFeed(t)
	store := &writeCounter{Store: db.NewActivityStore(f.db)}
	b := activity.NewBatcher(activity.New(store, f.clock.Now), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	at := f.clock.Now().Add(-time.Hour)
	for i := range 20 {
		if err := b.Append(ctx, activity.Event{At: at.Add(time.Duration(i) * time.Second), Actor: "agent",
			Action: activity.ActionAgentCall, Outcome: "ran", Tool: fmt.Sprintf("t%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	if err := b.Append(ctx, activity.Event{At: at.Add(time.Minute), Actor: "agent", Action: activity.ActionAgentCall, Outcome: "ran", Tool: "late"}); err != nil {
		t.Fatal(err)
	}
	got := f.all(t, activity.Filter{Action: activity.ActionAgentCall})
	if len(got) != 21 {
		t.Fatalf("%d entries, want 21", len(got))
	}
	slices.Reverse(got) // the feed is newest first
	for i, e := range got[:20] {
		if want := fmt.Sprintf("t%02d", i); e.Tool != want || !e.At.Equal(at.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("entry %d is %s at %s, want %s at %s", i, e.Tool, e.At, want, at.Add(time.Duration(i)*time.Second))
		}
	}
	if got[20].Tool != "late" {
		t.Fatalf("the entry appended after Close is %s", got[20].Tool)
	}
	if n := store.writes.Load(); n >= 20 {
		t.Fatalf("%d writes for 21 events appended back to back; want them gathered", n)
	}
}
