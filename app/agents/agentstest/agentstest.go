// Package agentstest builds, for tests, what Maven's MCP server for agents stands on, all of it
// real: a database in a temporary directory, the allowlist and the activity feed on it, an MCP
// manager connected to the servers the test runs (mcptest's scripted servers, over HTTP),
// the owner's limits, the runner, the notifiers and the pending calls, and an agents.Service
// keeping its clients' tools current; the clients and the lock are the test's to set.
package agentstest

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/limits"
	"maven/app/mcp"
	"maven/app/notify"
	"maven/app/pending"
	"maven/app/runner"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// World is one Maven's worth of what agents reach.
type World struct {
	DB      *bun.DB
	Tools   *allowlist.Service
	Limits  *limits.Service
	Manager *mcp.Manager
	Runner  *runner.Executor
	Feed    *activity.Log
	Notify  *notify.Dispatcher
	Pending *pending.Service
	Agents  *agents.Service
	Lock    *Lock
	Clients *Clients
}

// Origin is the World's one origin: the notices' links are there.
const Origin = "http://localhost:8080"

// ShortWait is how long an agent's call waits for the owner in a World whose options do not
// say: a test that approves in time says how long it waits.
const ShortWait = 50 * time.Millisecond

// Options shape a World.
type Options struct {
	// Servers are the MCP servers Maven is configured with, by name (each an HTTP URL, or any
	// config.Server).
	Servers map[string]config.Server
	// NoRun leaves the agents service's Run loop off: what a client's servers offer is then
	// what they offered when they were built, whatever the rows do after.
	NoRun bool
	// Agents tune the service (its Logger is the test's log by default).
	Agents agents.Options
	// Pending tunes the pending calls (its Logger is the test's log by default), and Notify
	// says which notifiers tell the owner of them (none: every notice is a failed delivery).
	Pending pending.Options
	Notify  config.Notify
	// WrapRows, if set, wraps the allowlist as the agents service reads it (to count its
	// reads, say).
	WrapRows func(agents.Rows) agents.Rows
}

// HTTPServer is the config of an MCP server at url over streamable HTTP.
func HTTPServer(url string) config.Server {
	return config.Server{Type: config.TransportHTTP, URL: url}
}

// New builds a World that lives as long as tb.
func New(tb testing.TB, opts Options) *World {
	tb.Helper()
	bdb := testdb.Open(tb)
	ctx, cancel := context.WithCancel(context.Background())
	out := &testWriter{tb: tb}
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w := &World{DB: bdb, Lock: &Lock{}, Clients: &Clients{policies: map[string]agents.Policy{}}}
	w.Tools = allowlist.NewService(db.NewToolStore(bdb), time.Now)
	w.Limits = limits.NewService(db.NewLimitsStore(bdb), w.Tools, time.Now)
	w.Feed = activity.New(db.NewActivityStore(bdb), time.Now)
	servers := map[string]config.Server{}
	for name, s := range opts.Servers {
		s.Name = name
		servers[name] = s
	}
	w.Manager = mcp.NewManager(servers, mcp.NewToolReconciler(w.Tools, time.Now, logger),
		mcp.ManagerOptions{RefreshGap: 10 * time.Millisecond}, logger)
	w.Manager.Run(ctx)
	if opts.Agents.Logger == nil {
		opts.Agents.Logger = logger
	}
	if opts.Pending.Logger == nil {
		opts.Pending.Logger = logger
	}
	if opts.Pending.Wait == 0 {
		// A call no test approves answers at once rather than after the daemon's 8 seconds.
		opts.Pending.Wait = ShortWait
	}
	w.Runner = runner.New(w.Tools, w.Manager, runner.Options{Limits: w.Limits})
	var err error
	if w.Notify, err = notify.New(ctx, db.NewPushStore(bdb), notify.Options{Config: opts.Notify, Origins: []string{Origin},
		Activity: w.Feed, Logger: logger}); err != nil {
		tb.Fatal(err)
	}
	if w.Pending, err = pending.New(pending.Deps{Store: db.NewPendingStore(bdb), Rows: w.Tools, Runner: w.Runner, Lock: w.Lock,
		Notifier: w.Notify, Activity: w.Feed, Canonical: mcp.Canonicalize}, opts.Pending); err != nil {
		tb.Fatal(err)
	}
	if err := w.Pending.Recover(ctx); err != nil {
		tb.Fatal(err)
	}
	var rows agents.Rows = w.Tools
	if opts.WrapRows != nil {
		rows = opts.WrapRows(rows)
	}
	w.Agents, err = agents.New(agents.Deps{Rows: rows, Runner: w.Runner, Allow: w.Manager, Limits: w.Limits, Lock: w.Lock,
		Clients: w.Clients, Activity: w.Feed, Pending: w.Pending}, opts.Agents)
	if err != nil {
		tb.Fatal(err)
	}
	w.Clients.agents = w.Agents
	var done sync.WaitGroup
	done.Go(func() { w.Pending.Run(ctx) })
	if !opts.NoRun {
		done.Go(func() { w.Agents.Run(ctx) })
	}
	tb.Cleanup(func() {
		cancel()
		done.Wait()
		w.Pending.Close()
		w.Manager.Close()
		out.done.Store(true)
	})
	return w
}

// Row waits up to ten seconds for the row named name to satisfy ok, and returns it.
func (w *World) Row(tb testing.TB, name string, ok func(allowlist.Tool) bool) allowlist.Tool {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := w.Tools.List(context.Background(), allowlist.Filter{})
		if err != nil {
			tb.Fatal(err)
		}
		if i := slices.IndexFunc(rows, func(r allowlist.Tool) bool { return r.Name == name }); i >= 0 && ok(rows[i]) {
			return rows[i]
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no row %q as wanted within 10s; rows: %v", name, names(rows))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Enable waits for the row named name to be proposed and enables it as the owner would.
func (w *World) Enable(tb testing.TB, name string) allowlist.Tool {
	tb.Helper()
	row := w.Row(tb, name, func(r allowlist.Tool) bool { return r.State == allowlist.StateProposed })
	row, err := w.Tools.EnableTool(context.Background(), row.ID,
		authtest.Proof(tb, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
	if err != nil {
		tb.Fatal(err)
	}
	return row
}

// SetLimits saves set as the limits of the enabled row named name, with the step-up the
// owner's page would ask for.
func (w *World) SetLimits(tb testing.TB, name string, set limits.Set) {
	tb.Helper()
	row := w.Row(tb, name, func(r allowlist.Tool) bool { return r.State == allowlist.StateEnabled })
	digest, err := limits.Digest(row.Fingerprint, set)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Limits.Save(context.Background(), row.ID, row.Fingerprint, set,
		authtest.Proof(tb, auth.One(auth.ActionSetLimits, row.ID, digest))); err != nil {
		tb.Fatal(err)
	}
}

// Entries returns the activity feed's entries of agents' calls, newest first.
func (w *World) Entries(tb testing.TB) []activity.Entry {
	tb.Helper()
	page, err := w.Feed.Query(context.Background(), activity.Filter{Kind: activity.KindAgents, Limit: activity.MaxLimit})
	if err != nil {
		tb.Fatal(err)
	}
	return page.Entries
}

func names(rows []allowlist.Tool) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Name + " (" + string(r.State) + ")"
	}
	return out
}

// Lock is a lock state the test sets.
type Lock struct{ locked atomic.Bool }

// Set locks (true) or unlocks the daemon.
func (l *Lock) Set(locked bool) { l.locked.Store(locked) }

// Locked implements agents.Lock.
func (l *Lock) Locked() bool { return l.locked.Load() }

// Clients are the clients the owner approved, as the test sets them: setting or revoking one
// tells the agents service, as app/clients does.
type Clients struct {
	agents *agents.Service

	mu       sync.Mutex
	policies map[string]agents.Policy
}

// Set approves (or changes) the client id with policy.
func (c *Clients) Set(id string, policy agents.Policy) {
	c.mu.Lock()
	c.policies[id] = policy
	c.mu.Unlock()
	c.agents.ClientChanged(id)
}

// Revoke revokes the client id.
func (c *Clients) Revoke(id string) {
	c.mu.Lock()
	delete(c.policies, id)
	c.mu.Unlock()
	c.agents.ClientChanged(id)
}

// Policy implements agents.Clients.
func (c *Clients) Policy(_ context.Context, id string) (agents.Policy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.policies[id]
	if !ok {
		return agents.Policy{}, agents.ErrUnknownClient
	}
	return p, nil
}

// testWriter writes a World's log to the test's, until the World is cleaned up: a goroutine
// that logs later must not fail the test that ended.
type testWriter struct {
	tb   testing.TB
	done atomic.Bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	if !w.done.Load() {
		w.tb.Log(string(p))
	}
	return len(p), nil
}
