package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth/authtest"
	"maven/app/mcp"
)

// proposeMCP adds an MCP row as discovery would.
func (f *fixture) proposeMCP(server, remote, description string, schema string, readOnly bool) allowlist.Tool {
	f.t.Helper()
	d := mcp.Declared{Name: remote, Description: description, InputSchema: json.RawMessage(schema), ReadOnlyHint: readOnly}
	shape, err := mcp.Fingerprint(d)
	canon := shape.Canonical
	if err != nil {
		f.t.Fatal(err)
	}
	t, _, err := f.tools.ProposeTool(context.Background(), allowlist.Proposal{
		Name: mcp.LocalName(server, remote, func(string) bool { return false }), Cmd: []string{"mcp", server, remote}, Scope: allowlist.MCPScope(server),
		Destructive: !readOnly, ReadOnly: readOnly, Description: description, InputSchema: json.RawMessage(schema),
		Fingerprint: "sha256:test", Declared: canon, Source: allowlist.SourceDiscovery,
		Provenance: "listed by " + server, Actor: "discovery",
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return t
}

func TestToolsPageShowsRowsGroupedWithCounts(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	f.proposeMCP("vikunja", "list_tasks", "Lists tasks.", `{"type":"object"}`, true)
	f.proposeMCP("vikunja", "delete_project", "Deletes a project.", `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`, false)
	local := f.propose("restart_router")
	if _, err := f.tools.DisableTool(t.Context(), local.ID, "owner"); err != nil {
		t.Fatal(err)
	}

	r := b.get("/tools")
	if r.Code != http.StatusOK {
		t.Fatalf("/tools: %d", r.Code)
	}
	body := r.Body.String()
	for _, want := range []string{
		`id="tool-1"`, `data-tool-name="vikunja_list_tasks"`, `data-state="proposed"`,
		`data-tool-name="restart_router"`, `data-state="disabled"`,
		`>Proposed <span class="n">2</span>`, `>Disabled <span class="n">1</span>`, `>All <span class="n">3</span>`,
		`>Enable</button>`, `>Reject</button>`, "claims read-only",
		`class="badge destructive"`, "Lists tasks.", "MCP server “vikunja”", "/bin/echo restart_router",
		"listed by vikunja", `id="mcp-servers"`, `hx-trigger="input changed delay:300ms, search"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/tools lacks %q", want)
		}
	}
	// Grouped by server, local commands first; within a server proposals come first.
	localAt, vikunjaAt := strings.Index(body, `<h3>Local commands</h3>`), strings.Index(body, `<h3>MCP server “vikunja”</h3>`)
	if localAt < 0 || vikunjaAt < localAt {
		t.Error("rows are not grouped by server")
	}
	// A destructive tool carries one badge that says so, not a second "may change things".
	if row := rowHTML(t, body, 2); strings.Count(row, `class="badge `) != 2 || strings.Contains(row, "may change things") {
		t.Errorf("destructive row badges: %s", row)
	}
}

func TestToolNamesAndServerDataAreEscaped(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	const xss = "<script>alert(1)</script>"
	f.proposeMCP("evil", xss, xss+` "quoted" & <b>bold</b>`, `{"type":"object","description":"`+strings.ReplaceAll(xss, "/", `\/`)+`"}`, true)
	f.servers.set(mcp.ServerStatus{
		Name: xss, Transport: "http", Target: "https://evil.example/" + xss, State: mcp.StateBackoff,
		LastError: xss, TrustText: xss, Since: time.Now().Add(-3 * time.Minute),
	})

	for _, path := range []string{"/tools", "/tools?q=script", "/tools/servers"} {
		body := b.htmx(http.MethodGet, path, nil).Body.String()
		if path == "/tools" {
			body = b.get(path).Body.String()
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>bold") {
			t.Fatalf("%s renders hostile input as markup:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Fatalf("%s does not show the hostile name as text:\n%s", path, body)
		}
	}
}

func TestInvisibleCharactersAreShownAndFlagged(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	clean := f.proposeMCP("srv", "list_tasks", "Lists tasks.", `{"type":"object"}`, true)
	zw := f.proposeMCP("srv", "search", "Searches\u200b tasks.", `{"type":"object"}`, true)
	bidi := f.proposeMCP("srv", "read\u202efdp.exe", "Reads.", `{"type":"object"}`, true)
	schema := f.proposeMCP("srv", "get", "Gets.", `{"type":"object","properties":{"q":{"description":"\u2066hidden\u2069"}}}`, true)
	tag := f.proposeMCP("srv", "tagged", "Tag\U000E0041\U000E0042 smuggling.", `{}`, true)

	body := b.get("/tools").Body.String()
	row := func(id int64) string { return rowHTML(t, body, id) }
	const flag = "Contains invisible characters"
	if strings.Contains(row(clean.ID), flag) {
		t.Error("a clean row is flagged")
	}
	for _, c := range []struct {
		id   int64
		mark string
	}{{zw.ID, mark("U+200B")}, {bidi.ID, mark("U+202E")}, {schema.ID, "invisible"}, {tag.ID, mark("U+E0041")}} {
		r := row(c.id)
		if !strings.Contains(r, flag) || !strings.Contains(r, c.mark) || !strings.Contains(r, "flagged") {
			t.Errorf("row %d is not flagged with %s:\n%s", c.id, c.mark, r)
		}
	}
	if strings.Contains(body, "\u200b") || strings.Contains(body, "\u202e") {
		t.Error("a raw invisible character reached the page text")
	}
}

func TestSearchAndPagination(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	for i := range 120 {
		f.proposeMCP("srv", fmt.Sprintf("tool_%03d", i), fmt.Sprintf("Tool number %d.", i), `{}`, true)
	}
	f.proposeMCP("special", "find_100%_match", "Matches literally.", `{}`, true)

	// The search box asks with HX-Request and gets the list alone.
	r := b.htmx(http.MethodGet, "/tools?q=tool_00", nil)
	body := r.Body.String()
	if r.Code != http.StatusOK || strings.Contains(body, "<html") || !strings.Contains(body, `id="tool-list"`) {
		t.Fatalf("search partial: %d\n%s", r.Code, body)
	}
	if n := strings.Count(body, `class="tool `); n != 10 {
		t.Fatalf("tool_00 matched %d rows, want 10", n)
	}
	// % and _ are matched literally.
	body = b.htmx(http.MethodGet, "/tools?q=100%25", nil).Body.String()
	if n := strings.Count(body, `class="tool `); n != 1 || !strings.Contains(body, "find_100%_match") {
		t.Fatalf("literal %% search matched %d rows", n)
	}
	// Searching by server name.
	body = b.htmx(http.MethodGet, "/tools?q=special", nil).Body.String()
	if n := strings.Count(body, `class="tool `); n != 1 {
		t.Fatalf("server search matched %d rows", n)
	}
	// Pages of 50.
	body = b.get("/tools").Body.String()
	if n := strings.Count(body, `class="tool `); n != 50 || !strings.Contains(body, "page 1 of 3") || !strings.Contains(body, "/tools?page=2") {
		t.Fatalf("page 1: %d rows", n)
	}
	body = b.htmx(http.MethodGet, "/tools?page=3", nil).Body.String()
	if n := strings.Count(body, `class="tool `); n != 21 {
		t.Fatalf("page 3: %d rows", n)
	}
	// A history restore wants the whole page.
	r = b.do(http.MethodGet, "/tools?q=tool", nil, http.Header{"Hx-Request": {"true"}, "Hx-History-Restore-Request": {"true"}})
	if !strings.Contains(r.Body.String(), "<html") {
		t.Fatal("history restore got a partial")
	}
}

func TestRedefinedToolShowsFieldDiff(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.proposeMCP("vikunja", "list_tasks", "Lists tasks.", `{"type":"object"}`, true)
	b.mustStepUp(a, enableOf(tool))
	mustOK(t, "enable", b.enable(tool))

	changed := mcp.Declared{Name: "list_tasks", Description: "Lists tasks and deletes the done ones.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"purge":{"type":"boolean"}}}`), ReadOnlyHint: false}
	shape, err := mcp.Fingerprint(changed)
	canon := shape.Canonical
	if err != nil {
		t.Fatal(err)
	}
	err = f.tools.Update(t.Context(), func(tx *allowlist.Tx) error {
		_, err := tx.Redeclare(t.Context(), tool.ID, allowlist.Redeclaration{
			Fingerprint: "sha256:new", Declared: canon, Description: changed.Description,
			InputSchema: changed.InputSchema, ReadOnly: false,
			ChangedFields: []string{"description", "inputSchema", "readOnlyHint"}, Provenance: "redefined by vikunja",
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	row := rowHTML(t, b.get("/tools").Body.String(), tool.ID)
	for _, want := range []string{
		`data-state="proposed"`, "Changed since you approved it", "Description", "Lists tasks.",
		"Lists tasks and deletes the done ones.", "Input schema", "purge", "Read-only claim",
		"claims read-only", "may change things", `class="badge destructive"`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("redefined row lacks %q:\n%s", want, row)
		}
	}
}

func TestPossibleRenameIsSaid(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	_, _, err := f.tools.ProposeTool(t.Context(), allowlist.Proposal{
		Name: "srv_list_todos", Cmd: []string{"mcp", "srv", "list_todos"}, Scope: "mcp:srv",
		ReadOnly: true, RenameOf: "list_tasks", Source: allowlist.SourceDiscovery, Provenance: "listed", Actor: "discovery",
	})
	if err != nil {
		t.Fatal(err)
	}
	body := b.get("/tools").Body.String()
	if !strings.Contains(body, "Possibly a rename of <code>list_tasks</code>") || !strings.Contains(body, "inherits nothing") {
		t.Fatalf("rename not said:\n%s", body)
	}
}

func TestServersCard(t *testing.T) {
	f := newFixture(t)
	b := f.signUp(authtest.New(testOrigin))
	since := f.clock.Now().Add(-5 * time.Minute)
	f.servers.set(
		mcp.ServerStatus{Name: "memory", Transport: "stdio", Target: "npx -y server-memory", State: mcp.StateConnected,
			Trust: mcp.TrustLocalProcess, TrustText: "A local process running as the daemon's user, with full access to this machine.", Since: since, Tools: 9},
		mcp.ServerStatus{Name: "vikunja", Transport: "http", Target: "https://tasks.example/mcp", State: mcp.StateBackoff,
			Trust: mcp.TrustRemoteTLS, TrustText: "A remote service reached over TLS.", LastError: "connection refused", Since: since},
	)
	r := b.htmx(http.MethodGet, "/tools/servers", nil)
	body := r.Body.String()
	for _, want := range []string{
		`id="mcp-servers"`, `hx-trigger="every 2s"`, `data-server="memory" data-state="connected"`,
		`data-server="vikunja" data-state="backoff"`, "connection refused", timeText(since), "stdio",
		"https://tasks.example/mcp", "with full access to this machine", `<span class="server-tools">9 tools</span>`,
		"1 connected · 1 waiting to retry", `<li class="server tone-trouble"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("servers card lacks %q", want)
		}
	}
	f.servers.set(mcp.ServerStatus{Name: "memory", State: mcp.StateFailed, Since: time.Now()})
	if body := b.htmx(http.MethodGet, "/tools/servers", nil).Body.String(); !strings.Contains(body, `data-server="memory" data-state="failed"`) {
		t.Fatal("card did not follow the new state")
	}
}

// timeText is how a page shows t.
func timeText(t time.Time) string { return t.Local().Format("2 Jan 2006, 15:04") }

// mark is how a spelled-out hidden character appears in the HTML (html/template writes + as &#43;).
func mark(code string) string {
	return "⟨" + strings.ReplaceAll(code, "+", "&#43;") + "⟩"
}

// rowHTML cuts one row's <article> out of a page.
func rowHTML(t *testing.T, body string, id int64) string {
	t.Helper()
	i := strings.Index(body, `id="tool-`+itoa(id)+`"`)
	if i < 0 {
		t.Fatalf("no row %d", id)
	}
	start := strings.LastIndex(body[:i], "<article")
	end := strings.Index(body[i:], "</article>")
	return body[start : i+end]
}
