package voice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/phrases"
	"maven/app/runner"
	"maven/app/voice"
	"maven/db"
	"maven/internal/testkit/testclock"
	"maven/internal/testkit/testdb"
)

// fakeRunner records every run instead of running anything.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	err   error
	res   runner.Result
}

func (f *fakeRunner) Exec(_ context.Context, row allowlist.Tool, args map[string]any) (runner.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(args)
	f.calls = append(f.calls, row.Name+" "+string(b))
	if f.err != nil {
		return runner.Result{}, f.err
	}
	if f.res.Output != "" || f.res.IsError {
		return f.res, nil
	}
	return runner.Result{Output: "ran " + row.Name + " " + string(b)}, nil
}

func (f *fakeRunner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// allowBinder applies rule 15 with a fixed allow_tools list, as the MCP manager does: a tool
// is allowed by its name on every server, or by its row's name on its own.
type allowBinder map[string]bool

func (a allowBinder) Positional(row allowlist.Tool) mcp.Positional {
	return mcp.NewPositional(row, a[row.RemoteName()] || a[row.Name])
}

type lockFlag struct{ locked bool }

func (l *lockFlag) Locked() bool { return l.locked }

type world struct {
	t       testing.TB
	svc     *allowlist.Service
	phrases *phrases.Service
	limits  *limits.Service
	feed    *activity.Log
	voice   *voice.Service
	runner  *fakeRunner
	lock    *lockFlag
	clock   *testclock.Clock // the test moves it; the audit writer reads it from its own goroutine
	ids     map[string]int64
	allowed allowBinder // the allow_tools of newVoice's services
}

const (
	stringSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`
	undescribed  = `{"type":"object","properties":{},"required":["id"]}`
	noArgs       = `{"type":"object"}`
)

func newWorld(t testing.TB) *world {
	t.Helper()
	bdb := testdb.Open(t)
	clock := testclock.New(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	w := &world{t: t, svc: allowlist.NewService(db.NewToolStore(bdb), clock.Now), feed: activity.New(db.NewActivityStore(bdb), clock.Now),
		runner: &fakeRunner{}, lock: &lockFlag{}, clock: clock, ids: map[string]int64{},
		allowed: allowBinder{"search_tasks": true, "delete_task": true, "get_task": true}}
	w.phrases = phrases.NewService(db.NewPhrasesStore(bdb), w.svc, clock.Now)
	w.limits = limits.NewService(db.NewLimitsStore(bdb), w.svc, clock.Now)
	add := func(server, tool, schema string, readOnly bool) {
		p := allowlist.Proposal{Name: server + "_" + tool, Cmd: []string{"mcp", server, tool}, Scope: allowlist.MCPScope(server),
			ReadOnly: readOnly, Destructive: !readOnly, InputSchema: json.RawMessage(schema), Fingerprint: "sha256:" + tool,
			Declared: "{}", Source: allowlist.SourceDiscovery}
		w.enable(t, p)
	}
	add("vikunja", "search_tasks", stringSchema, true)
	add("vikunja", "list_tasks", noArgs, true)
	add("todoist", "list_tasks", noArgs, true)
	add("vikunja", "delete_task", stringSchema, false)
	add("vikunja", "archive_all", noArgs, false)
	add("vikunja", "find_project", stringSchema, true) // read-only but not in allow_tools
	add("vikunja", "get_task", undescribed, true)
	w.enable(t, allowlist.Proposal{Name: "restart_router", Cmd: []string{"/usr/local/bin/restart-router"}, Scope: allowlist.ScopeLocal})
	w.voice = w.newVoice(voice.Options{})
	return w
}

// newVoice builds the voice service over the world, with the options the tests share.
func (w *world) newVoice(opts voice.Options) *voice.Service {
	if opts.Origins == nil {
		opts.Origins = []string{"https://maven.example"}
	}
	opts.Now = w.clock.Now
	opts.TurnsPerSecond, opts.Burst = 1e6, 1e6
	v := voice.New(voice.Deps{Rows: w.svc, Binder: w.allowed,
		Runner: w.runner, Lock: w.lock, Phrases: w.phrases, Limits: w.limits, Activity: w.feed}, opts)
	w.t.Cleanup(v.CancelPending)
	return v
}

// turn says text in conversation "conv-1".
func (w *world) turn(text string) voice.Reply {
	return w.voice.Turn(context.Background(), voice.Request{Conversation: "conv-1", Text: text})
}

func (w *world) enable(t testing.TB, p allowlist.Proposal) {
	t.Helper()
	ctx := context.Background()
	row, _, err := w.svc.ProposeTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.svc.EnableTool(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	w.ids[row.Name] = row.ID
}

func TestOutcomes(t *testing.T) {
	for _, c := range []struct {
		name      string
		turns     []string
		locked    bool
		runErr    error
		isError   bool
		want      voice.Outcome
		speech    string
		wantCalls int
	}{
		{name: "read-only tool with a spoken argument", turns: []string{"search tasks buy milk"}, want: voice.OutcomeRan, speech: `{"query":"buy milk"}`, wantCalls: 1},
		{name: "read-only tool without arguments", turns: []string{"vikunja list tasks"}, want: voice.OutcomeRan, wantCalls: 1},
		{name: "destructive tool asks first", turns: []string{"archive all"}, want: voice.OutcomeConfirm, speech: "Run archive all on vikunja? Say yes"},
		{name: "yes runs it", turns: []string{"archive all", "yes"}, want: voice.OutcomeRan, speech: "ran vikunja_archive_all", wantCalls: 1},
		{name: "a mutating tool never gets a spoken argument", turns: []string{"delete task 42"}, want: voice.OutcomeNeedsArgs, speech: "needs query, which I cannot take from the words after its name. A phrase"},
		{name: "go ahead runs it", turns: []string{"restart router", "Go ahead!"}, want: voice.OutcomeRan, wantCalls: 1},
		{name: "anything else cancels", turns: []string{"archive all", "no wait"}, want: voice.OutcomeCancelled, speech: "nothing ran"},
		{name: "a yes with a but is not yes", turns: []string{"archive all", "yes, but not that one"}, want: voice.OutcomeCancelled, speech: "nothing ran"},
		{name: "ambiguous name asks which server", turns: []string{"list tasks"}, want: voice.OutcomeAsk, speech: "Which one: todoist list tasks or vikunja list tasks?"},
		{name: "local command takes no arguments", turns: []string{"restart router now please"}, want: voice.OutcomeRefused, speech: "takes no arguments"},
		{name: "undescribed required argument", turns: []string{"get task 7"}, want: voice.OutcomeRefused, speech: "will not guess"},
		{name: "read-only tool not in allow_tools", turns: []string{"find project garden"}, want: voice.OutcomeNeedsArgs, speech: "query"},
		{name: "read-only tool missing its argument is asked for it", turns: []string{"search tasks"}, want: voice.OutcomeAsk, speech: "What query?"},
		{name: "the answer fills it", turns: []string{"search tasks", "buy milk"}, want: voice.OutcomeRan, speech: `{"query":"buy milk"}`, wantCalls: 1},
		{name: "the question can be cancelled", turns: []string{"search tasks", "never mind"}, want: voice.OutcomeCancelled, speech: "nothing ran"},
		{name: "no required arguments but a tail", turns: []string{"archive all projects"}, want: voice.OutcomeNeedsArgs},
		{name: "unknown name suggests close ones", turns: []string{"serch tasks milk"}, want: voice.OutcomeNoMatch, speech: "search tasks"},
		{name: "locked", turns: []string{"search tasks milk"}, locked: true, want: voice.OutcomeLocked, speech: "Unlock it on your phone"},
		{name: "run failure", turns: []string{"vikunja list tasks"}, runErr: mcp.ErrNotConnected, want: voice.OutcomeError, speech: "not connected", wantCalls: 1},
		{name: "disabled after the match", turns: []string{"vikunja list tasks"}, runErr: fmt.Errorf("tool x: %w", runner.ErrNotEnabled), want: voice.OutcomeError, speech: "no longer enabled", wantCalls: 1},
		{name: "redefined after the match", turns: []string{"vikunja list tasks"}, runErr: fmt.Errorf("tool x: %w", runner.ErrChanged), want: voice.OutcomeError, speech: "changed a moment ago", wantCalls: 1},
		{name: "tool error result", turns: []string{"vikunja list tasks"}, isError: true, want: voice.OutcomeError, speech: "reported an error", wantCalls: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.lock.locked = c.locked
			w.runner.err = c.runErr
			if c.isError {
				w.runner.res = runner.Result{Output: "boom", IsError: true}
			}
			var r voice.Reply
			for _, text := range c.turns {
				r = w.turn(text)
			}
			if r.Outcome != c.want || !strings.Contains(r.Speech, c.speech) {
				t.Fatalf("got %s %q, want %s containing %q", r.Outcome, r.Speech, c.want, c.speech)
			}
			if w.runner.count() != c.wantCalls {
				t.Fatalf("runs = %v, want %d", w.runner.calls, c.wantCalls)
			}
			if r.Outcome == voice.OutcomeConfirm && !r.ExpectsReply {
				t.Fatal("a confirm prompt must expect a reply")
			}
		})
	}
}

func TestConfirmIsVoidWhenTheRowChanges(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		change func(t *testing.T, w *world, id int64)
	}{
		{"redefined on the server", func(t *testing.T, w *world, id int64) {
			err := w.svc.Update(ctx, func(tx *allowlist.Tx) error {
				_, err := tx.Redeclare(ctx, id, allowlist.Redeclaration{Fingerprint: "sha256:new", Declared: "{}", InputSchema: json.RawMessage(stringSchema)})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"disabled", func(t *testing.T, w *world, id int64) {
			if _, err := w.svc.DisableTool(ctx, id, "owner"); err != nil {
				t.Fatal(err)
			}
		}},
		{"disabled and enabled again", func(t *testing.T, w *world, id int64) {
			if _, err := w.svc.DisableTool(ctx, id, "owner"); err != nil {
				t.Fatal(err)
			}
			w.clock.Advance(time.Second)
			row, err := w.svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.svc.EnableTool(ctx, id, authtest.Proof(t, auth.One(auth.ActionEnableTool, id, row.ApprovalDigest()))); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			if r := w.voice.Turn(ctx, voice.Request{Conversation: "c", Text: "archive all"}); r.Outcome != voice.OutcomeConfirm {
				t.Fatalf("%s %q", r.Outcome, r.Speech)
			}
			w.clock.Advance(time.Second)
			c.change(t, w, w.ids["vikunja_archive_all"])
			r := w.voice.Turn(ctx, voice.Request{Conversation: "c", Text: "yes"})
			if r.Outcome != voice.OutcomeRefused || !strings.Contains(r.Speech, "changed") {
				t.Fatalf("%s %q", r.Outcome, r.Speech)
			}
			if w.runner.count() != 0 {
				t.Fatalf("ran: %v", w.runner.calls)
			}
		})
	}
}

func TestConfirmTooLateOrElsewhere(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "archive all"})
	w.clock.Advance(61 * time.Second)
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "yes"}); r.Outcome != voice.OutcomeCancelled || !strings.Contains(r.Speech, "too late") {
		t.Fatalf("late yes: %s %q", r.Outcome, r.Speech)
	}
	w.voice.Turn(ctx, voice.Request{Conversation: "b", Text: "archive all"})
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "c", Text: "yes"}); r.Outcome != voice.OutcomeNoMatch {
		t.Fatalf("yes in another conversation: %s %q", r.Outcome, r.Speech)
	}
	// The prompt of b is still waiting, and is used once.
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "b", Text: "yes"}); r.Outcome != voice.OutcomeRan {
		t.Fatalf("b: %s %q", r.Outcome, r.Speech)
	}
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "b", Text: "yes"}); r.Outcome == voice.OutcomeRan {
		t.Fatal("a confirm ran twice")
	}
	if w.runner.count() != 1 {
		t.Fatalf("runs: %v", w.runner.calls)
	}
}

func TestLockCancelsPendingConfirms(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "archive all"})
	w.lock.locked = true
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "yes"}); r.Outcome != voice.OutcomeLocked {
		t.Fatalf("%s", r.Outcome)
	}
	w.lock.locked = false
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "yes"}); r.Outcome == voice.OutcomeRan || w.runner.count() != 0 {
		t.Fatalf("a confirm survived the lock: %s", r.Outcome)
	}
}

func TestConcurrentConversationsKeepTheirOwnConfirm(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	for i := range 100 {
		w.enable(t, allowlist.Proposal{Name: fmt.Sprintf("switch_%d", i), Cmd: []string{"/bin/switch", fmt.Sprint(i)}, Scope: allowlist.ScopeLocal})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := fmt.Sprintf("conv-%d", i)
			if r := w.voice.Turn(ctx, voice.Request{Conversation: conv, Text: fmt.Sprintf("switch %d", i)}); r.Outcome != voice.OutcomeConfirm {
				errs <- fmt.Errorf("%s: %s %q", conv, r.Outcome, r.Speech)
				return
			}
			r := w.voice.Turn(ctx, voice.Request{Conversation: conv, Text: "yes"})
			if want := fmt.Sprintf("ran switch_%d {}", i); r.Outcome != voice.OutcomeRan || r.Speech != want {
				errs <- fmt.Errorf("%s: %s %q, want %q", conv, r.Outcome, r.Speech, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if w.runner.count() != 100 {
		t.Fatalf("runs = %d", w.runner.count())
	}
}

func TestFloodOfConversationsIsBounded(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	// No recorder: the flood test is about memory.
	w.voice = voice.New(voice.Deps{Rows: w.svc, Binder: allowBinder{}, Runner: w.runner, Lock: w.lock},
		voice.Options{MaxPending: 1000, TurnsPerSecond: 1e9, Burst: 1e9, Now: w.clock.Now})
	defer w.voice.CancelPending()
	for i := range 100000 {
		w.voice.Turn(ctx, voice.Request{Conversation: fmt.Sprintf("flood-%d", i), Text: "archive all"})
	}
	if n := w.voice.Pending(); n != 1000 {
		t.Fatalf("pending confirms = %d, want the cap of 1000", n)
	}
	// The newest survive; the oldest were evicted.
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "flood-99999", Text: "yes"}); r.Outcome != voice.OutcomeRan {
		t.Fatalf("newest: %s", r.Outcome)
	}
	if r := w.voice.Turn(ctx, voice.Request{Conversation: "flood-0", Text: "yes"}); r.Outcome == voice.OutcomeRan {
		t.Fatal("an evicted confirm ran")
	}
}

func TestTurnsAreAudited(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "search tasks milk"})
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "find project x"})
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "archive all"})
	w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: "yes"})
	p, err := w.feed.Query(ctx, activity.Filter{Action: activity.ActionVoiceTurn})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range slices.Backward(p.Entries) {
		got = append(got, e.Tool+":"+e.Outcome)
	}
	want := "vikunja_search_tasks:ran vikunja_find_project:needs_args vikunja_archive_all:confirm vikunja_archive_all:ran"
	if strings.Join(got, " ") != want {
		t.Fatalf("voice turns %q, want %q", got, want)
	}
	// The row's own audit trail is about changes; a turn changes no row.
	evs, err := w.svc.Events(ctx, w.ids["vikunja_archive_all"])
	if err != nil || len(evs) != 2 {
		t.Fatalf("row events %+v %v", evs, err)
	}
}

// TestTurnsKeepTheReply: each turn's entry in the feed keeps what Maven said back, the turn that
// matched nothing and the question of a confirm included.
func TestTurnsKeepTheReply(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	var said []string
	for _, text := range []string{"open the pod bay doors", "archive all", "yes"} {
		said = append(said, w.voice.Turn(ctx, voice.Request{Conversation: "a", Text: text}).Speech)
	}
	p, err := w.feed.Query(ctx, activity.Filter{Action: activity.ActionVoiceTurn})
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, e := range slices.Backward(p.Entries) {
		var detail map[string]any
		if err := json.Unmarshal(e.Detail, &detail); err != nil {
			t.Fatal(err)
		}
		reply, _ := detail["reply"].(string)
		replies = append(replies, reply)
	}
	if !slices.Equal(replies, said) || slices.Contains(replies, "") {
		t.Fatalf("the feed keeps the replies %q, Maven said %q", replies, said)
	}
}

func TestLongOutputIsCutForSpeech(t *testing.T) {
	w := newWorld(t)
	w.runner.res = runner.Result{Output: strings.Repeat("word ", 500) + "\x1b[31m"}
	r := w.turn("vikunja list tasks")
	if len([]rune(r.Speech)) > 401 || !strings.HasSuffix(r.Speech, "…") || strings.ContainsRune(r.Speech, 0x1b) {
		t.Fatalf("%d %q", len(r.Speech), r.Speech)
	}
}
