package allowlist_test

import (
	"errors"
	"fmt"
	"testing"

	"maven/app/allowlist"
)

func enabledMCP(id int64, server, tool string) allowlist.Tool {
	return allowlist.Tool{ID: id, Name: server + "_" + tool, Cmd: []string{"mcp", server, tool},
		Scope: allowlist.MCPScope(server), State: allowlist.StateEnabled}
}

func TestMatcher(t *testing.T) {
	rows := []allowlist.Tool{
		enabledMCP(1, "vikunja", "list_tasks"),
		enabledMCP(2, "todoist", "list_tasks"),
		enabledMCP(3, "vikunja", "search_tasks"),
		enabledMCP(4, "everything", "get-sum"),
		enabledMCP(5, "memory", "read_graph"),
		{ID: 6, Name: "restart_router", Cmd: []string{"/usr/local/bin/restart-router"}, Scope: allowlist.ScopeLocal, State: allowlist.StateEnabled},
		{ID: 7, Name: "lights", Cmd: []string{"/bin/lights"}, Scope: allowlist.ScopeLocal, State: allowlist.StateEnabled},
		{ID: 8, Name: "lights_off", Cmd: []string{"/bin/lights", "off"}, Scope: allowlist.ScopeLocal, State: allowlist.StateEnabled},
		{ID: 9, Name: "format_disk", Cmd: []string{"/sbin/mkfs"}, Scope: allowlist.ScopeLocal, State: allowlist.StateProposed},
		{ID: 10, Name: "wipe", Cmd: []string{"/bin/wipe"}, Scope: allowlist.ScopeLocal, State: allowlist.StateDisabled},
		enabledMCP(11, "my-tasks", "ping"),
	}
	m := allowlist.NewMatcher(rows)
	for _, c := range []struct {
		utterance string
		wantID    int64
		wantTail  string
		wantErr   error
		ambiguous int
	}{
		{utterance: "search tasks buy milk", wantID: 3, wantTail: "buy milk"},
		{utterance: "Search Tasks: buy milk.", wantID: 3, wantTail: "buy milk"},
		{utterance: "vikunja list tasks", wantID: 1},
		{utterance: "Todoist, list tasks today", wantID: 2, wantTail: "today"},
		{utterance: "list tasks", ambiguous: 2},
		{utterance: "get sum 2.5", wantID: 4, wantTail: "2.5"},
		{utterance: "GET-SUM -3", wantID: 4, wantTail: "-3"},
		{utterance: "everything get sum", wantID: 4},
		{utterance: "read graph", wantID: 5},
		{utterance: "restart router now!", wantID: 6, wantTail: "now"},
		{utterance: "lights off", wantID: 8}, // longest match wins
		{utterance: "lights on", wantID: 7, wantTail: "on"},
		{utterance: "my tasks ping", wantID: 11},                  // server name with '-' read as a space
		{utterance: "format disk", wantErr: allowlist.ErrNoMatch}, // proposed rows never match
		{utterance: "wipe", wantErr: allowlist.ErrNoMatch},        // nor disabled ones
		{utterance: "please list tasks", wantErr: allowlist.ErrNoMatch},
		{utterance: "", wantErr: allowlist.ErrNoMatch},
		{utterance: "...", wantErr: allowlist.ErrNoMatch},
		{utterance: "search", wantErr: allowlist.ErrNoMatch},
		{utterance: "searchtasks", wantErr: allowlist.ErrNoMatch},
	} {
		t.Run(c.utterance, func(t *testing.T) {
			got, err := m.Match(c.utterance)
			if c.ambiguous > 0 {
				var amb *allowlist.AmbiguousError
				if !errors.As(err, &amb) || len(amb.Candidates) != c.ambiguous {
					t.Fatalf("err = %v, want ambiguity between %d rows", err, c.ambiguous)
				}
				return
			}
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v (matched %d)", err, c.wantErr, got.Tool.ID)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Tool.ID != c.wantID || got.Tail != c.wantTail {
				t.Fatalf("matched %d tail %q, want %d tail %q", got.Tool.ID, got.Tail, c.wantID, c.wantTail)
			}
		})
	}
}

func TestSpokenWords(t *testing.T) {
	got := fmt.Sprint(allowlist.SpokenWords("  Get-Sum__of THE numbers!? ÄÖ  "))
	if want := "[get sum of the numbers äö]"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func manyRows(n int) []allowlist.Tool {
	rows := make([]allowlist.Tool, n)
	for i := range rows {
		rows[i] = enabledMCP(int64(i+1), fmt.Sprintf("server%d", i%50), fmt.Sprintf("tool_number_%d_action", i))
	}
	return rows
}

// BenchmarkMatch measures one utterance against 10,000 enabled rows (target: well under 50 µs).
func BenchmarkMatch(b *testing.B) {
	m := allowlist.NewMatcher(manyRows(10000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Match("server7 tool number 9957 action with some tail words"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewMatcher(b *testing.B) {
	rows := manyRows(10000)
	b.ReportAllocs()
	for b.Loop() {
		allowlist.NewMatcher(rows)
	}
}
