package db

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"maven/app/allowlist"
)

// TestSearchNarrowsByTheIndex: a query of three characters or more, as written or of several
// words, long ones included, reads the tools by the ids the trigram index names and those after
// the last it holds (a range of ids), never by a scan of every row; only a query with nothing of three characters scans.
func TestSearchNarrowsByTheIndex(t *testing.T) {
	ctx := context.Background()
	bdb, err := Open(ctx, filepath.Join(t.TempDir(), "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bdb.Close() })
	plan := func(query string) string {
		q := filterTools(bdb.NewSelect().Model((*toolRow)(nil)), allowlist.Filter{Query: query})
		rows, err := bdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.String())
		if err != nil {
			t.Fatalf("%q: %v", query, err)
		}
		defer rows.Close()
		var lines []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, detail)
		}
		return strings.Join(lines, "\n")
	}
	for _, q := range []string{
		"forecast", "tasks list", "get sum", "list the open tasks of every project in the workspace",
		strings.Repeat("archive ", 40), "Über Liste",
	} {
		p := plan(q)
		if !strings.Contains(p, "SCAN tools_search VIRTUAL TABLE") || !strings.Contains(p, "SEARCH tool_row USING INTEGER PRIMARY KEY") ||
			strings.Contains(p, "SCAN tool_row") || !strings.Contains(p, "SEARCH tools USING INTEGER PRIMARY KEY (rowid>?)") {
			t.Errorf("%q is not narrowed by the index:\n%s", q, p)
		}
	}
	if p := plan("ab"); strings.Contains(p, "tools_search") || !strings.Contains(p, "SCAN tool_row") {
		t.Errorf("a query of short words only goes to the index:\n%s", p)
	}
}
