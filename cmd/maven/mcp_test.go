package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/mcp/mcptest"
	"maven/db"
	"maven/internal/daemontest"
)

// loopbackServer serves a scripted MCP server over streamable HTTP on a fixed loopback
// address, so it can be stopped and started again where the daemon expects it.
type loopbackServer struct {
	addr string
	srv  *http.Server
}

func serveScripted(t *testing.T, s *mcptest.Scripted, addr string) *loopbackServer {
	t.Helper()
	var ln net.Listener
	var err error
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the old listener's port may take a moment to free
	}
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.HTTPHandler()}
	go srv.Serve(ln)
	ls := &loopbackServer{addr: ln.Addr().String(), srv: srv}
	t.Cleanup(ls.stop)
	return ls
}

func (l *loopbackServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
	l.srv.Close()
}

// serverStatus is one entry of `maven mcp-servers --json`.
type serverStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Target    string `json:"target"`
	State     string `json:"state"`
	Trust     string `json:"trust"`
	TrustText string `json:"trust_text"`
	LastError string `json:"last_error"`
	// LastStderr is the last lines on stderr of a stdio server that exited.
	LastStderr string    `json:"last_stderr"`
	Since      time.Time `json:"since"`
	Tools      int       `json:"tools"`
}

func mcpServers(t *testing.T, data string) map[string]serverStatus {
	t.Helper()
	out, err := maven(t, data, "mcp-servers", "--json")
	if err != nil {
		t.Fatalf("mcp-servers: %v: %s", err, out)
	}
	var list []serverStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("mcp-servers --json: %v\n%s", err, out)
	}
	m := map[string]serverStatus{}
	for _, s := range list {
		m[s.Name] = s
	}
	return m
}

func toolsByCmd(t *testing.T, data string) map[string]toolResult {
	t.Helper()
	m := map[string]toolResult{}
	for _, r := range toolsJSON(t, data) {
		m[strings.Join(r.Cmd, " ")] = r
	}
	return m
}

// enableOffline enables rows with the daemon stopped, as the owner's passkey step-up would.
func enableOffline(t *testing.T, data string, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	svc := allowlist.NewService(db.NewToolStore(bdb), time.Now)
	for _, id := range ids {
		enable(t, svc, id)
	}
}

// enable stands in for the owner's passkey step-up.
func enable(t *testing.T, svc *allowlist.Service, id int64) {
	t.Helper()
	row, err := svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.EnableTool(context.Background(), id, authtest.Proof(t, auth.One(auth.ActionEnableTool, id, row.ApprovalDigest()))); err != nil {
		t.Fatal(err)
	}
}

const searchSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`

func TestDaemonDiscoversAndKeepsApprovals(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	scriptedBin, err := mcptest.BuildCommand(dir)
	if err != nil {
		t.Fatal(err)
	}
	stdioTools := filepath.Join(dir, "stdio-tools.json")
	if err := mcptest.WriteTools(stdioTools,
		mcptest.ToolSpec{Name: "read_notes", Description: "Reads notes", ReadOnly: true, Text: "three notes"},
		mcptest.ToolSpec{Name: "wipe_notes", Description: "Deletes every note"},
	); err != nil {
		t.Fatal(err)
	}
	remote := mcptest.NewScripted(
		mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks", InputSchema: json.RawMessage(searchSchema), ReadOnly: true, Echo: true},
		mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks", ReadOnly: true, Text: "no tasks"},
	)
	defer remote.Close()
	http1 := serveScripted(t, remote, "127.0.0.1:0")

	cfg := filepath.Join(dir, "maven.json")
	writeConfig := func(bin string) {
		c := fmt.Sprintf(`{"refresh_interval": "1s", "mcpServers": {
			"notes": {"command": %q, "args": [%q]},
			"my-tasks": {"type": "http", "url": "http://%s/mcp", "allow_tools": ["search_tasks"]}
		}}`, bin, stdioTools, http1.addr)
		if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig(scriptedBin)
	daemontest.ApproveCommandLines(t, data, cfg)

	d := startDaemon(t, data, "--config", cfg)
	var rows map[string]toolResult
	waitFor(t, 15*time.Second, func() bool {
		rows = toolsByCmd(t, data)
		return len(rows) == 4
	})
	for cmd, want := range map[string]bool{ // destructive = !readOnlyHint
		"mcp notes read_notes": false, "mcp notes wipe_notes": true,
		"mcp my-tasks search_tasks": false, "mcp my-tasks list_tasks": false,
	} {
		r := rows[cmd]
		if r.State != "proposed" || r.Destructive != want || r.Fingerprint == nil {
			t.Errorf("%s: %+v", cmd, r)
		}
	}
	if got := rows["mcp my-tasks search_tasks"].Name; got != "my_tasks_search_tasks" {
		t.Errorf("local name %q", got)
	}
	servers := mcpServers(t, data)
	if s := servers["notes"]; s.State != "connected" || s.Transport != "stdio" || s.Trust != "local-process" || s.Tools != 2 {
		t.Errorf("notes: %+v", s)
	}
	if s := servers["my-tasks"]; s.State != "connected" || s.Transport != "http" || s.Trust != "loopback" || s.Tools != 2 {
		t.Errorf("my-tasks: %+v", s)
	}

	// list_changed is acted on promptly: a new tool is proposed without waiting for a refresh.
	remote.Add(mcptest.ToolSpec{Name: "count_tasks", Description: "Counts", ReadOnly: true, Text: "7"})
	waitFor(t, 5*time.Second, func() bool { _, ok := toolsByCmd(t, data)["mcp my-tasks count_tasks"]; return ok })
	rows = toolsByCmd(t, data)
	d.stop(t)

	// The owner enables three rows; then both servers are unreachable at the next start.
	enableOffline(t, data, rows["mcp notes read_notes"].ID, rows["mcp my-tasks search_tasks"].ID, rows["mcp my-tasks list_tasks"].ID)
	http1.stop()
	writeConfig(filepath.Join(dir, "no-such-binary"))
	daemontest.ApproveCommandLines(t, data, cfg) // a changed command line needs approval again
	startDaemon(t, data, "--config", cfg)
	waitFor(t, 10*time.Second, func() bool {
		s := mcpServers(t, data)
		return s["notes"].State == "failed" && s["my-tasks"].State == "backoff"
	})
	for cmd, r := range toolsByCmd(t, data) {
		want := "proposed"
		if cmd == "mcp notes read_notes" || cmd == "mcp my-tasks search_tasks" || cmd == "mcp my-tasks list_tasks" {
			want = "enabled"
		}
		if r.State != want {
			t.Errorf("with servers down, %s is %s, want %s", cmd, r.State, want)
		}
	}

	// The HTTP server comes back where it was: nothing changed, so the rows are as the owner left them.
	serveScripted(t, remote, http1.addr)
	waitFor(t, 15*time.Second, func() bool { return mcpServers(t, data)["my-tasks"].State == "connected" })
	if r := toolsByCmd(t, data)["mcp my-tasks search_tasks"]; r.State != "enabled" {
		t.Fatalf("after reconnect: %+v", r)
	}

	// A redefinition sends the enabled row back to proposed, naming what changed.
	remote.Redefine(mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks. Also deletes done ones.", ReadOnly: false, Text: "x"})
	waitFor(t, 5*time.Second, func() bool { return toolsByCmd(t, data)["mcp my-tasks list_tasks"].State == "proposed" })
	r := toolsByCmd(t, data)["mcp my-tasks list_tasks"]
	if !r.Destructive || !strings.Contains(r.Provenance, "description") || !strings.Contains(r.Provenance, "readOnlyHint") {
		t.Fatalf("redefined row: %+v", r)
	}

	// A tool the connected server stops listing is withdrawn.
	remote.Remove("search_tasks")
	waitFor(t, 5*time.Second, func() bool { return toolsByCmd(t, data)["mcp my-tasks search_tasks"].State == "withdrawn" })
	// And comes back as a proposal, never enabled by itself.
	remote.Add(mcptest.ToolSpec{Name: "search_tasks", Description: "Searches tasks", InputSchema: json.RawMessage(searchSchema), ReadOnly: true, Echo: true})
	waitFor(t, 5*time.Second, func() bool { return toolsByCmd(t, data)["mcp my-tasks search_tasks"].State == "proposed" })
	if p := toolsByCmd(t, data)["mcp my-tasks search_tasks"].Provenance; !strings.Contains(p, "returned unchanged") {
		t.Fatalf("provenance %q", p)
	}
}

// TestNewStdioServerWaitsForApproval shows that the approval is what holds a new command line
// back: unapproved, its command never runs; approved, the same config starts it.
func TestNewStdioServerWaitsForApproval(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	marker := filepath.Join(dir, "MARKER")
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch on PATH")
	}
	cfg := filepath.Join(dir, "maven.json")
	c := fmt.Sprintf(`{"metrics": true, "mcpServers": {"toucher": {"command": %q, "args": [%q]}}}`, touch, marker)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, data, "--config", cfg)
	waitFor(t, 10*time.Second, func() bool {
		s := mcpServers(t, data)["toucher"]
		return s.State == "awaiting-approval"
	})
	// The supervisor has decided; give a wrongly started process time to run all the same.
	time.Sleep(500 * time.Millisecond)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unapproved command ran (marker: %v)", err)
	}
	if s := mcpServers(t, data)["toucher"]; s.State != "awaiting-approval" || s.LastError != "" {
		t.Fatalf("toucher: %+v", s)
	}
	token, err := maven(t, data, "metrics-token", "--rotate")
	if err != nil {
		t.Fatalf("%v %s", err, token)
	}
	if _, body := getMetrics(t, d.addr, strings.TrimSpace(token)); !strings.Contains(body, `maven_mcp_server_state{server="toucher",state="awaiting-approval"} 1`) {
		t.Errorf("the gauge does not show the server awaiting approval:\n%s", body)
	}
	d.stop(t)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unapproved command ran by shutdown (marker: %v)", err)
	}

	daemontest.ApproveCommandLines(t, data, cfg)
	startDaemon(t, data, "--config", cfg)
	// touch is no MCP server: it runs, exits, and the dial fails; the marker proves it ran.
	waitFor(t, 10*time.Second, func() bool {
		_, err := os.Stat(marker)
		return err == nil
	})
	if s := mcpServers(t, data)["toucher"]; s.State == "awaiting-approval" {
		t.Fatalf("still waiting for approval: %+v", s)
	}
}

// TestMCPServersShowsWhyAServerDied: a stdio server that says why on stderr and exits 1 shows
// its exit status and those lines in `maven mcp-servers` and in its --json (last_stderr), its
// key masked, rather than the sdk's "client is closing: EOF".
func TestMCPServersShowsWhyAServerDied(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	script := filepath.Join(dir, "brave-search")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"key: $BRAVE_API_KEY\" >&2\necho 'BRAVE_API_KEY is not a valid key' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "maven.json")
	c := fmt.Sprintf(`{"mcpServers": {"brave": {"command": %q, "env": {"BRAVE_API_KEY": "BSA-literal-key"}}}}`, script)
	if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	daemontest.ApproveCommandLines(t, data, cfg)
	startDaemon(t, data, "--config", cfg)

	var st serverStatus
	waitFor(t, 15*time.Second, func() bool {
		st = mcpServers(t, data)["brave"]
		return st.LastStderr != ""
	})
	if st.LastError != "exited with status 3: BRAVE_API_KEY is not a valid key" || st.LastStderr != "key: ***\nBRAVE_API_KEY is not a valid key" {
		t.Errorf("last error %q, last stderr %q", st.LastError, st.LastStderr)
	}
	out, err := maven(t, data, "mcp-servers")
	if err != nil || !strings.Contains(out, "  last error: exited with status 3: BRAVE_API_KEY is not a valid key\n  its last lines on stderr:\n    key: ***\n    BRAVE_API_KEY is not a valid key\n") {
		t.Errorf("mcp-servers: %v\n%s", err, out)
	}
	if strings.Contains(out, "BSA-literal-key") {
		t.Errorf("mcp-servers shows the key:\n%s", out)
	}
}
