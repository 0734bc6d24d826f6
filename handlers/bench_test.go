package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maven/app/activity"
	"maven/app/agents"
	"maven/app/agents/agentstest"
	"maven/app/allowlist"
	"maven/app/auth/authtest"
	"maven/app/pending"
	"maven/db"
	"maven/handlers"
)

// benchFixture is a signed-in browser over an allowlist of 5,000 rows from 20 servers, a few of
// them enabled or disabled.
func benchFixture(b *testing.B) *browser {
	b.Helper()
	f := newFixture(b)
	br := f.signUp(authtest.New(testOrigin))
	err := f.tools.Update(b.Context(), func(tx *allowlist.Tx) error {
		for i := range 5000 {
			server := fmt.Sprintf("server%02d", i%20)
			remote := fmt.Sprintf("tool_%04d", i)
			_, _, err := tx.Propose(b.Context(), allowlist.Proposal{
				Name: server + "_" + remote, Cmd: []string{"mcp", server, remote}, Scope: allowlist.MCPScope(server),
				ReadOnly: i%3 == 0, Destructive: i%3 != 0,
				Description: fmt.Sprintf("Tool %d of %s: does one small thing with the tasks it is given.", i, server),
				InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
				Source:      allowlist.SourceDiscovery, Provenance: "listed by " + server, Actor: "discovery",
			})
			if err != nil {
				return err
			}
			if i%10 == 0 {
				if _, err := tx.Disable(b.Context(), int64(i+1), "owner"); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return br
}

func BenchmarkToolsPage5000(b *testing.B) {
	br := benchFixture(b)
	r := br.get("/tools")
	if r.Code != http.StatusOK || strings.Count(r.Body.String(), `class="tool `) != 50 {
		b.Fatalf("/tools: %d", r.Code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := br.get("/tools"); r.Code != http.StatusOK {
			b.Fatal(r.Code)
		}
	}
}

func BenchmarkToolsSearch5000(b *testing.B) {
	br := benchFixture(b)
	r := br.htmx(http.MethodGet, "/tools?q=server07", nil)
	if r.Code != http.StatusOK || strings.Count(r.Body.String(), `class="tool `) != 50 || strings.Contains(r.Body.String(), "<html") {
		b.Fatalf("search: %d", r.Code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := br.htmx(http.MethodGet, "/tools?q=server07", nil); r.Code != http.StatusOK {
			b.Fatal(r.Code)
		}
	}
}

func BenchmarkToolsSearchNoMatch5000(b *testing.B) {
	br := benchFixture(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := br.htmx(http.MethodGet, "/tools?q=nothing-like-this", nil); r.Code != http.StatusOK {
			b.Fatal(r.Code)
		}
	}
}

// BenchmarkActivityPage10000 renders the first page of /activity over a feed of 10,000 voice
// turns, and the same filtered to a rare outcome (one turn in 100).
func BenchmarkActivityPage10000(b *testing.B) {
	f := newFixture(b)
	br := f.signUp(authtest.New(testOrigin))
	events := make([]activity.Event, 0, 10000)
	for i := range 10000 {
		outcome := "ran"
		if i%100 == 0 {
			outcome = "no_match"
		}
		events = append(events, turn(f.clock.Now(), outcome, "calc_add", fmt.Sprintf("add %d and 1", i), map[string]any{"a": i, "b": 1}))
	}
	if err := f.feed.Append(b.Context(), events...); err != nil {
		b.Fatal(err)
	}
	for _, path := range []string{"/activity", "/activity?outcome=no_match"} {
		b.Run(path, func(b *testing.B) {
			if r := br.get(path); r.Code != http.StatusOK || strings.Count(r.Body.String(), `<li class="entry`) != 50 {
				b.Fatalf("%s: %d", path, r.Code)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := br.get(path); r.Code != http.StatusOK {
					b.Fatal(r.Code)
				}
			}
		})
	}
}

// serversFixture is a signed-in browser over servers × 100 rows, each server's rows proposed in
// one statement as discovery does; every 10th row is disabled.
func serversFixture(b *testing.B, servers int) *browser {
	b.Helper()
	f := newFixture(b)
	br := f.signUp(authtest.New(testOrigin))
	err := f.tools.Update(b.Context(), func(tx *allowlist.Tx) error {
		for s := range servers {
			server := fmt.Sprintf("server%03d", s)
			ps := make([]allowlist.Proposal, 100)
			for i := range ps {
				remote := fmt.Sprintf("tool_%02d", i)
				ps[i] = allowlist.Proposal{
					Name: server + "_" + remote, Cmd: []string{"mcp", server, remote}, Scope: allowlist.MCPScope(server),
					ReadOnly: i%3 == 0, Destructive: i%3 != 0,
					Description: fmt.Sprintf("Tool %d of %s: does one small thing with the tasks it is given.", i, server),
					InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`),
					Source:      allowlist.SourceDiscovery, Provenance: "listed by " + server, Actor: "discovery",
				}
			}
			rows, err := tx.ProposeNew(b.Context(), ps)
			if err != nil {
				return err
			}
			for i, row := range rows {
				if i%10 == 0 {
					if _, err := tx.Disable(b.Context(), row.ID, "owner"); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	// The daemon's upkeep indexes the new rows and merges the search index once writes pause
	// (db.Upkeep); all at once here.
	for _, stmt := range []string{
		"INSERT INTO tools_search (tools_search) VALUES ('rebuild')",
		"UPDATE tools_search_through SET id = (SELECT max(id) FROM tools)",
		"INSERT INTO tools_search (tools_search) VALUES ('optimize')",
	} {
		if _, err := f.db.ExecContext(b.Context(), stmt); err != nil {
			b.Fatal(err)
		}
	}
	return br
}

// BenchmarkToolsSearchGrowth is the search partial for one server's name (100 rows match) over
// 5,000 and 50,000 rows: the index keeps it sublinear in the rows (issue 23: at most twice).
func BenchmarkToolsSearchGrowth(b *testing.B) {
	for _, servers := range []int{50, 500} {
		b.Run(fmt.Sprintf("rows=%d", servers*100), func(b *testing.B) {
			br := serversFixture(b, servers)
			const path = "/tools?q=server007"
			if r := br.htmx(http.MethodGet, path, nil); r.Code != http.StatusOK || strings.Count(r.Body.String(), `class="tool `) != 50 {
				b.Fatalf("search: %d", r.Code)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := br.htmx(http.MethodGet, path, nil); r.Code != http.StatusOK {
					b.Fatal(r.Code)
				}
			}
		})
	}
}

// BenchmarkApprovalsPage1000 is /approvals with 1,000 calls waiting: the page shows 50 and
// counts the rest (docs/design.md#rule-30).
func BenchmarkApprovalsPage1000(b *testing.B) {
	f := newFixture(b)
	br := f.signUp(authtest.New(testOrigin))
	ctx := b.Context()
	var row allowlist.Tool
	err := f.tools.Update(ctx, func(tx *allowlist.Tx) (err error) {
		row, _, err = tx.Propose(ctx, allowlist.Proposal{Name: "unlock_door", Cmd: []string{"/bin/echo", "unlocked"}, Scope: allowlist.ScopeLocal,
			Destructive: true, Source: allowlist.SourceCLI, Provenance: "bench", Actor: "bench"})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	store := db.NewPendingStore(f.db)
	now := time.Now()
	for i := range 1000 {
		c := &pending.Call{Client: pending.Client{ID: fmt.Sprintf("client-%d", i/5), Name: fmt.Sprintf("Client %d", i/5)},
			ToolID: row.ID, Tool: row.Name, Cmd: row.Cmd, Fingerprint: row.ApprovalDigest(), Args: []byte(fmt.Sprintf(`{"door":%d}`, i)),
			Created: now, Expires: now.Add(time.Hour), State: pending.StatePending}
		if _, _, err := store.Submit(ctx, c, now, pending.DefaultMaxPerClient); err != nil {
			b.Fatal(err)
		}
	}
	if r := br.get("/approvals"); r.Code != http.StatusOK || strings.Count(r.Body.String(), `data-state="pending"`) != 50 {
		b.Fatalf("/approvals: %d", r.Code)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := br.get("/approvals"); r.Code != http.StatusOK {
			b.Fatal(r.Code)
		}
	}
}

// BenchmarkAgentCall is one agent's read-only call as scripts/bench times it: go-sdk's client
// in its latest era (2026-07-28, stateless) through /mcp to a real upstream over loopback HTTP,
// for a CPU profile of the daemon's side (go test -bench AgentCall -cpuprofile).
func BenchmarkAgentCall(b *testing.B) {
	for _, e := range eras[:2] {
		b.Run(e.version, func(b *testing.B) {
			// The client's rate is lifted: the benchmark calls as fast as it can.
			w, _ := agentsWorld(b, agentstest.Options{Agents: agents.Options{CallsPerSecond: 1e9, Burst: 1e9}})
			af := newAgentsFixture(b, w, handlers.AgentLimits{}, nil)
			cs, _ := af.connect(b, e, "token-a")
			for b.Loop() {
				if text, isErr := callText(b, cs, "s_read"); isErr || text != "read it" {
					b.Fatalf("the call answered %q", text)
				}
			}
		})
	}
}
