package allowlist_test

import (
	"errors"
	"fmt"
	"strings"
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

// TestFlatten: local names (docs/design.md#rule-11) and spoken names (docs/design.md#rule-17)
// are read by this one function.
func TestFlatten(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"already flat", "list_tasks", "list_tasks"},
		{"upper case", "ListTasks", "listtasks"},
		{"dash", "my-tasks", "my_tasks"},
		{"punctuation run", "a -- b..c", "a_b_c"},
		{"leading and trailing junk", "__--a b!!  ", "a_b"},
		{"digits kept", "v2.Search", "v2_search"},
		{"unicode letters are outside", "café crème", "caf_cr_me"},
		{"only unicode", "日本語", ""},
		{"emoji run", "a😀😀b", "a_b"},
		{"kelvin sign is not k", "\u212aill", "ill"},
		{"dotted capital I is not i", "\u0130d", "d"},
		{"markup", "<script>alert(1)</script>", "script_alert_1_script"},
		{"invalid UTF-8", "a\xffb", "a_b"},
		{"empty", "", ""},
		{"only junk", "-_- !", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := allowlist.Flatten(tt.in); got != tt.want {
				t.Errorf("Flatten(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestSpokenWords: the matcher hears an utterance as Flatten reads a name, so a character
// beyond ASCII never becomes an ASCII letter.
func TestSpokenWords(t *testing.T) {
	for _, s := range []string{"  Get-Sum__of THE numbers!? ÄÖ  ", "\u212aill switch", "\u0130d", "a\xffb", "ＫＩＬＬ", "café crème"} {
		if got, want := strings.Join(allowlist.SpokenWords(s), "_"), allowlist.Flatten(s); got != want {
			t.Errorf("SpokenWords(%q) = %q, Flatten %q", s, got, want)
		}
	}
	if got := fmt.Sprint(allowlist.SpokenWords("  Get-Sum__of THE numbers!? ÄÖ  ")); got != "[get sum of the numbers]" {
		t.Errorf("got %s", got)
	}
}

// TestLookalikesReachNoName: a Kelvin sign (U+212A) is no "k". Spoken, "\u212aill switch" is
// heard as "ill switch" and reaches only what that reaches; a server's tool named with one is
// not reached by "kill switch", and its spoken name is the words of its local name.
func TestLookalikesReachNoName(t *testing.T) {
	kill := allowlist.Tool{ID: 1, Name: "Kill_switch", Cmd: []string{"/bin/kill-switch"}, Scope: allowlist.ScopeLocal, State: allowlist.StateEnabled}
	lookalike := enabledMCP(2, "hostile", "\u212aill_switch")
	m := allowlist.NewMatcher([]allowlist.Tool{kill, lookalike})
	for _, c := range []struct {
		said   string
		wantID int64
	}{
		{"kill switch", 1},
		{"\u212aill switch", 2},
		{"ill switch", 2},
		{"hostile kill switch", 0},
		{"hostile \u212aill switch", 2},
	} {
		got, err := m.Match(c.said)
		switch {
		case c.wantID == 0 && !errors.Is(err, allowlist.ErrNoMatch):
			t.Errorf("%q reached %d (%v), want nothing", c.said, got.Tool.ID, err)
		case c.wantID != 0 && (err != nil || got.Tool.ID != c.wantID):
			t.Errorf("%q reached %d (%v), want %d", c.said, got.Tool.ID, err, c.wantID)
		}
	}
}

// TestArticlesAreNoPartOfAName: "the", "a" and "an" are passed over in names and utterances
// alike; the words after the name keep theirs.
func TestArticlesAreNoPartOfAName(t *testing.T) {
	m := allowlist.NewMatcher([]allowlist.Tool{
		{ID: 1, Name: "run_backup", Cmd: []string{"/bin/backup"}, Scope: allowlist.ScopeLocal, State: allowlist.StateEnabled},
		enabledMCP(2, "weather", "get_the_forecast"),
	})
	for _, c := range []struct {
		said   string
		wantID int64
		tail   string
	}{
		{"run the backup", 1, ""},
		{"the run backup", 1, ""},
		{"get forecast for a city", 2, "for a city"},
		{"get the forecast the day after", 2, "the day after"},
		{"weather get a forecast", 2, ""},
	} {
		got, err := m.Match(c.said)
		if err != nil || got.Tool.ID != c.wantID || got.Tail != c.tail {
			t.Errorf("%q: %d tail %q (%v), want %d tail %q", c.said, got.Tool.ID, got.Tail, err, c.wantID, c.tail)
		}
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
