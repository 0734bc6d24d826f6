package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp"
	"maven/db"
)

// toolsTimes are the /tools figures: the full page, the search partial for a server's name (100
// rows match, a page of 50 is shown) and for a word nothing matches.
type toolsTimes struct {
	page, search, noMatch []time.Duration
}

// seedTools writes servers × 100 rows into a new database at data, as discovery would have
// proposed them (fingerprint, declared shape, provenance). Every 20th row is enabled and every
// 10th disabled, so the page shows more than one group.
func seedTools(t *testing.T, data string, servers int) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	at := time.Now().UTC().Format(time.RFC3339)
	err = svc.Update(ctx, func(tx *allowlist.Tx) error {
		n := 0
		for s := range servers {
			server := serverName(s)
			for _, spec := range catalog(server, 100) {
				d := mcp.Declared{Name: spec.Name, Description: spec.Description, InputSchema: spec.InputSchema, ReadOnlyHint: spec.ReadOnly}
				shape, err := mcp.Fingerprint(d)
				if err != nil {
					return err
				}
				row, _, err := tx.Propose(ctx, allowlist.Proposal{
					Name: mcp.LocalName(server, spec.Name, func(string) bool { return false }),
					Cmd:  []string{"mcp", server, spec.Name}, Scope: allowlist.MCPScope(server),
					Destructive: !spec.ReadOnly, ReadOnly: spec.ReadOnly, Description: spec.Description,
					InputSchema: spec.InputSchema, Fingerprint: shape.Fingerprint, Declared: shape.Canonical,
					Source: allowlist.SourceDiscovery, Provenance: fmt.Sprintf("discovered on %s (%s)", server, at), Actor: "discovery",
				})
				if err != nil {
					return err
				}
				n++
				switch {
				case n%20 == 0:
					_, err = tx.Enable(ctx, row.ID, authtest.Proof(t, auth.One(auth.ActionEnableTool, row.ID, row.ApprovalDigest())))
				case n%10 == 0:
					_, err = tx.Disable(ctx, row.ID, "owner")
				}
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// benchTools seeds 5,000 rows from 50 servers, starts the real daemon on them, signs in through
// its setup link with a passkey, and then times, alternately, n times each: GET /tools, and the
// search partial GET /tools?q=… as htmx asks for it.
func benchTools(t *testing.T, bin string, n int) toolsTimes {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	seedTools(t, data, 50)
	d := startDaemon(t, bin, data, writeFile(t, dir, "maven.json", []byte(`{}`)))
	b := newBrowser(t, d)
	b.register(authtest.New(d.Origin()), d.setupToken(t), false)

	search := "/tools?q=" + serverName(13) // one server's 100 rows
	check := func(path string, partial bool, rows int) time.Duration {
		start := time.Now()
		status, body := b.get(path, partial)
		took := time.Since(start)
		if status != http.StatusOK || bytes.Count(body, []byte(`class="tool `)) != rows || partial == bytes.Contains(body, []byte("<html")) {
			t.Fatalf("GET %s (partial %v): %d, %d rows\n%.2000s", path, partial, status, bytes.Count(body, []byte(`class="tool `)), body)
		}
		return took
	}
	var tt toolsTimes
	for range 10 {
		check("/tools", false, 50)
		check(search, true, 50)
		check("/tools?q=nothing-like-this", true, 0)
	}
	for i := range n {
		steps := []func(){
			func() { tt.page = append(tt.page, check("/tools", false, 50)) },
			func() { tt.search = append(tt.search, check(search, true, 50)) },
			func() { tt.noMatch = append(tt.noMatch, check("/tools?q=nothing-like-this", true, 0)) },
		}
		for j := range steps {
			steps[(i+j)%len(steps)]()
		}
	}
	d.stop(t)
	return tt
}

// reportTools adds /tools and its search partial over 5,000 rows.
func reportTools(t *testing.T, e *benchEnv, rep *report) {
	tt := benchTools(t, e.bin, e.n(301))
	rep.add("`GET /tools`, full page, 5,000 rows: median", ms(median(tt.page)))
	rep.add("`GET /tools?q=…` search partial (htmx), 5,000 rows, 100 match: median (not yet a ratio)", ms(median(tt.search)))
	rep.add("`GET /tools?q=…` search partial, nothing matches: median", ms(median(tt.noMatch)))
	rep.raw("GET /tools", tt.page)
	rep.raw("GET /tools?q=server (partial)", tt.search)
	rep.raw("GET /tools?q=no-match (partial)", tt.noMatch)

}
