package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/db"
)

func TestListToolsQueryOrderAndPages(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, func() time.Time { return time.Unix(0, 0) })
	names := []string{"zeta", "alpha", "mid", "beta_x", "betaxx"}
	for _, n := range names {
		desc := "does " + n
		if n == "mid" {
			desc = "100% of the time"
		}
		if _, _, err := svc.ProposeTool(ctx, allowlist.Proposal{
			Name: n, Cmd: []string{"/bin/" + n}, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI,
			Description: desc, Actor: "test",
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.DisableTool(ctx, 2, "owner"); err != nil { // alpha
		t.Fatal(err)
	}

	list := func(f allowlist.Filter) string {
		rows, err := store.ListTools(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		s := ""
		for _, r := range rows {
			s += r.Name + " "
		}
		return s
	}
	tests := []struct {
		name string
		f    allowlist.Filter
		want string
	}{
		{"by id", allowlist.Filter{}, "zeta alpha mid beta_x betaxx "},
		{"by state then name", allowlist.Filter{Order: allowlist.OrderByState}, "beta_x betaxx mid zeta alpha "},
		{"page", allowlist.Filter{Order: allowlist.OrderByState, Limit: 2, Offset: 2}, "mid zeta "},
		{"offset alone", allowlist.Filter{Offset: 3}, "beta_x betaxx "},
		{"query", allowlist.Filter{Query: "ETA"}, "zeta beta_x betaxx "},
		{"underscore is literal", allowlist.Filter{Query: "beta_"}, "beta_x "},
		{"percent is literal", allowlist.Filter{Query: "0%"}, "mid "},
		{"bang is literal", allowlist.Filter{Query: "!"}, ""},
		{"description", allowlist.Filter{Query: "does alpha"}, "alpha "},
		{"command", allowlist.Filter{Query: "/bin/zeta"}, "zeta "},
	}
	for _, tt := range tests {
		if got := list(tt.f); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}

	counts, err := store.CountByState(ctx, allowlist.Filter{Query: "a", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(counts) != "map[disabled:1 proposed:4]" {
		t.Fatalf("counts: %v", counts)
	}
}

// The search index follows every change of a row, and a query is always literal text, never
// FTS5 syntax.
func TestSearchIndexFollowsRowsAndIsLiteral(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	propose := func(name, desc string) allowlist.Tool {
		row, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: name, Cmd: []string{"mcp", "srv", name}, Scope: "mcp:srv",
			ReadOnly: true, Description: desc, Source: allowlist.SourceDiscovery})
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	propose("quoted", `say "hi" NEAR(a b) OR c*`)
	row := propose("weather", "Reads the Forecast")
	// Every three-character run of "archive_b" is here, but not "archive_b" itself.
	propose("scattered", "archive x chive_b")
	propose("umlaut", "Über alles")
	names := func(q string) string {
		rows, err := store.ListTools(ctx, allowlist.Filter{Query: q})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		s := ""
		for _, r := range rows {
			s += r.Name + " "
		}
		return s
	}
	for q, want := range map[string]string{
		`"hi"`: "quoted ", `NEAR(a`: "quoted ", `OR c*`: "quoted ", `c*`: "quoted ", // two characters go to LIKE, where * is literal too
		"forecast": "weather ", "FORECAST": "weather ", "srv": "quoted weather scattered umlaut ", "mcp:srv": "quoted weather scattered umlaut ",
		`" OR "`: "", `""`: "",
		"archive_b": "", "chive_b": "scattered ", "archive x": "scattered ",
		// Case is ignored beyond ASCII too, as the trigram index ignores it, whatever the length.
		"über": "umlaut ", "ÜBER ALLES": "umlaut ", "üB": "umlaut ", "Ü": "umlaut ",
		// An ASCII query is checked by LIKE, on text that need not be ASCII.
		"ALLES": "umlaut ", "r al": "umlaut ",
	} {
		if got := names(q); got != want {
			t.Errorf("%q: got %q, want %q", q, got, want)
		}
	}
	// A redefinition changes the description: the index forgets the old text.
	err := svc.Update(ctx, func(tx *allowlist.Tx) error {
		_, err := tx.Redeclare(ctx, row.ID, allowlist.Redeclaration{Fingerprint: "sha256:2", Declared: "{}", ReadOnly: true, Description: "Deletes the calendar"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names("forecast"); got != "" {
		t.Fatalf("old text still found: %q", got)
	}
	if got := names("calendar"); got != "weather " {
		t.Fatalf("new text not found: %q", got)
	}
}

// TestOrderByStateFollowsStates: the order /tools groups rows in (stateRank, and the index the
// migration built on it) is the order of allowlist.States.
func TestOrderByStateFollowsStates(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	// Names sort against the state order, so only the state can put the rows in order.
	rows := map[string]allowlist.Tool{}
	for _, n := range []string{"d", "c", "b", "a"} {
		row, _, err := svc.ProposeTool(ctx, allowlist.Proposal{Name: n, Cmd: []string{"/bin/" + n},
			Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "test"})
		if err != nil {
			t.Fatal(err)
		}
		rows[n] = row
	}
	if _, err := svc.EnableTool(ctx, rows["c"].ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, rows["c"].ID, rows["c"].ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.DisableTool(ctx, rows["b"].ID, "owner"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Update(ctx, func(tx *allowlist.Tx) error {
		_, err := tx.Withdraw(ctx, rows["a"].ID, "test", "gone")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	listed, err := store.ListTools(ctx, allowlist.Filter{Order: allowlist.OrderByState})
	if err != nil {
		t.Fatal(err)
	}
	var got []allowlist.State
	for _, r := range listed {
		got = append(got, r.State)
	}
	if want := allowlist.States(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("OrderByState lists %v, allowlist.States is %v", got, want)
	}
}

// OrderByServer groups rows by scope, and within one scope lists them as OrderByState does; a
// state filter keeps that order.
func TestListToolsByServer(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	propose := func(scope, name string) allowlist.Tool {
		p := allowlist.Proposal{Name: name, Cmd: []string{"/bin/" + name}, Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "test"}
		if scope != allowlist.ScopeLocal {
			p.Cmd, p.Scope, p.Source = []string{"mcp", scope, name}, allowlist.MCPScope(scope), allowlist.SourceDiscovery
		}
		row, _, err := svc.ProposeTool(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return row
	}
	propose("tasks", "tasks_b")
	dis := propose("tasks", "tasks_a")
	propose("notes", "notes_z")
	propose(allowlist.ScopeLocal, "reboot")
	propose("tasks", "tasks_c")
	if _, err := svc.DisableTool(ctx, dis.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f    allowlist.Filter
		want string
	}{
		{allowlist.Filter{Order: allowlist.OrderByServer}, "reboot notes_z tasks_b tasks_c tasks_a "},
		{allowlist.Filter{Order: allowlist.OrderByServer, States: []allowlist.State{allowlist.StateProposed}}, "reboot notes_z tasks_b tasks_c "},
		{allowlist.Filter{Order: allowlist.OrderByServer, Limit: 2, Offset: 2}, "tasks_b tasks_c "},
	} {
		rows, err := store.ListTools(ctx, tt.f)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, r := range rows {
			got += r.Name + " "
		}
		if got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.f, got, tt.want)
		}
	}
}

// TestSearchMatchesWordsInAnyOrder: a query of several words finds the rows that hold each word,
// in any order, as the start of one of their words, '_' and '-' read as spaces as voice reads
// them (docs/design.md#search); a query that is one word, or has a letter alone, is matched as
// written.
func TestSearchMatchesWordsInAnyOrder(t *testing.T) {
	ctx := context.Background()
	bdb := newDB(t)
	store := db.NewToolStore(bdb)
	svc := allowlist.NewService(store, time.Now)
	for _, p := range []allowlist.Proposal{
		{Name: "list_tasks", Cmd: []string{"mcp", "vikunja", "list_tasks"}, Scope: "mcp:vikunja", Description: "Lists the open tasks."},
		{Name: "get-sum", Cmd: []string{"mcp", "calc", "get-sum"}, Scope: "mcp:calc", Description: "Adds numbers."},
		{Name: "tasks_archive", Cmd: []string{"mcp", "vikunja", "tasks_archive"}, Scope: "mcp:vikunja", Description: "Archives done tasks."},
		{Name: "Über_Liste", Cmd: []string{"mcp", "notes", "Über_Liste"}, Scope: "mcp:notes", Description: "Zeigt die Liste."},
	} {
		p.Source, p.ReadOnly = allowlist.SourceDiscovery, true
		if _, _, err := svc.ProposeTool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string]string{
		"tasks list":     "list_tasks ",
		"list tasks":     "list_tasks ",
		"TASKS-LIST":     "list_tasks ",
		"tasks_list":     "list_tasks ",
		"tas lis":        "list_tasks ", // as typed: the start of each word
		"get sum":        "get-sum ",
		"sum get":        "get-sum ",
		"get_sum":        "get-sum ",
		"tasks vikunja":  "list_tasks tasks_archive ",
		"open tasks":     "list_tasks ", // the description's words
		"archive tasks":  "tasks_archive ",
		"done archives":  "tasks_archive ",
		"liste über":     "Über_Liste ",
		"LISTE ÜBER":     "Über_Liste ",
		"list sum":       "",
		"tasks forecast": "",
		"asks ist":       "", // inside words, not their start
		// One word, or a letter alone: as written only.
		"tasks":   "list_tasks tasks_archive ",
		"list_t":  "list_tasks ",
		"tasks_l": "",
		"list t":  "",
	} {
		rows, err := store.ListTools(ctx, allowlist.Filter{Query: q})
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		got := ""
		for _, r := range rows {
			got += r.Name + " "
		}
		if got != want {
			t.Errorf("%q: got %q, want %q", q, got, want)
		}
	}
}
