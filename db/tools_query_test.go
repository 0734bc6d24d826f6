package db_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
)

func TestListToolsQueryOrderAndPages(t *testing.T) {
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
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
