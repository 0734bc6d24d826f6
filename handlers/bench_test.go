package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"maven/app/allowlist"
	"maven/app/auth/authtest"
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
