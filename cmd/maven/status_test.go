package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"maven/app/approval"
	"maven/app/config"
	"maven/app/mcp"
	"maven/internal/daemontest"
)

// TestStatusReportsWhatNeedsTheOwner: `maven status` names a command line awaiting approval, a
// failed server and one waiting to retry, each with why, the config's problems, and the config
// the last reload refused, with when and its errors; in the table and in --json.
func TestStatusReportsWhatNeedsTheOwner(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "maven.json")
	missing := filepath.Join(dir, "no-such-binary")
	good := fmt.Sprintf(`{"mcpServers": {
		"broken": {"command": %q},
		"far": {"type": "http", "url": "http://127.0.0.1:9/mcp", "timeout": 5}}}`, missing)
	writeFile(t, cfg, good)
	daemontest.ApproveCommandLines(t, data, cfg) // broken's command line is approved, and missing
	withWaiting := strings.Replace(good, `"broken"`, `"waiting": {"command": "/bin/echo", "args": ["never", "run"]}, "broken"`, 1)
	writeFile(t, cfg, withWaiting)
	startDaemon(t, data, "--config", cfg)
	waitFor(t, 15*time.Second, func() bool {
		s := mcpServers(t, data)
		return s["waiting"].State == "awaiting-approval" && s["broken"].State == "failed" && s["far"].State == "backoff"
	})
	writeFile(t, cfg, `{"tools": "all of them"}`)
	if out, err := maven(t, data, "reload"); err == nil {
		t.Fatalf("a broken config was applied: %s", out)
	}

	// far goes from waiting to retry to dialling again and back, every half second or so: the
	// report is read while it waits (it is not among the failed servers while it dials).
	var st statusResult
	waitFor(t, 15*time.Second, func() bool {
		st = statusJSON(t, data)
		return slices.ContainsFunc(st.FailedServers, func(f failedServer) bool { return f.Name == "far" })
	})
	if want := []awaitingServer{{Server: "waiting", Command: "/bin/echo never run"}}; !cmp.Equal(want, st.AwaitingApproval) {
		t.Errorf("awaiting_approval: %+v", st.AwaitingApproval)
	}
	if st.NeedsAuth == nil || len(st.NeedsAuth) != 0 {
		t.Errorf("needs_auth: %#v, want []", st.NeedsAuth)
	}
	failed := map[string]failedServer{}
	for _, f := range st.FailedServers {
		failed[f.Name] = f
	}
	if f := failed["broken"]; f.State != "failed" || !strings.Contains(f.Reason, "no-such-binary") || f.Since.IsZero() {
		t.Errorf("the failed server: %+v", f)
	}
	if f := failed["far"]; f.State != "backoff" || f.Reason == "" || len(failed) != 2 {
		t.Errorf("the server waiting to retry: %+v (all: %+v)", f, st.FailedServers)
	}
	// The missing command is said at read time too (config.CommandProblem).
	if len(st.ConfigProblems) != 2 || st.ConfigProblems[0].Key != "mcpServers.broken.command" || st.ConfigProblems[1].Key != "mcpServers.far.timeout" {
		t.Errorf("config_problems: %+v", st.ConfigProblems)
	}
	r := st.ConfigRefused
	if r == nil || r.File != cfg || time.Since(r.At) > time.Minute || len(r.Errors) != 1 || r.Errors[0].Key != "tools" {
		t.Fatalf("config_refused: %+v", r)
	}

	var out string
	waitFor(t, 15*time.Second, func() bool {
		var err error
		if out, err = maven(t, data, "status"); err != nil {
			t.Fatalf("status: %v %s", err, out)
		}
		return strings.Contains(out, "server far waiting to retry: ")
	})
	for _, want := range []string{
		"awaiting your approval on /tools: waiting: /bin/echo never run\n",
		"server broken failed: ", "server far waiting to retry: ",
		"config warning: mcpServers.far.timeout: ",
		"config refused at ", "the reload of " + cfg + " found 1 error, and the running config stays:\n  tools: expected",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("maven status lacks %q:\n%s", want, out)
		}
	}
}

// TestStatusNamesServersThatNeedSignIn: the needs-auth state comes with OAuth; a status report
// in that state (a test double of the manager's) is listed by name, in JSON and in the table.
func TestStatusNamesServersThatNeedSignIn(t *testing.T) {
	since := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	awaiting, needsAuth, failed := serversNeedingAttention([]mcp.ServerStatus{
		{Name: "a", State: mcp.StateConnected},
		{Name: "tasks", State: "needs-auth"},
		{Name: "notes", State: mcp.StateAwaitingApproval},
		{Name: "calendar", State: "needs-auth"},
		{Name: "down", State: mcp.StateFailed, LastError: "exec: not found", Since: since},
	}, []approval.PendingCommand{{Server: "notes", Display: "old"}, {Server: "notes", Display: "npx -y notes\nTOKEN=${secret:t}"}, {Server: "gone", Display: "x"}})
	if want := []string{"tasks", "calendar"}; !cmp.Equal(want, needsAuth) {
		t.Errorf("needs_auth: %v", needsAuth)
	}
	if want := []awaitingServer{{Server: "notes", Command: "npx -y notes\nTOKEN=${secret:t}"}}; !cmp.Equal(want, awaiting) {
		t.Errorf("awaiting_approval: %+v", awaiting)
	}
	if want := []failedServer{{Name: "down", State: "failed", Reason: "exec: not found", Since: since}}; !cmp.Equal(want, failed) {
		t.Errorf("failed_servers: %+v", failed)
	}

	var out bytes.Buffer
	printStatus(&out, statusResult{Tools: map[string]int{}, NeedsAuth: needsAuth, AwaitingApproval: awaiting,
		ConfigRefused: &config.Refusal{At: since, File: "/etc/maven.json", Errors: []config.Problem{{Key: "a", Msg: "x"}, {Msg: "y"}}}})
	for _, want := range []string{
		"needs you to sign in on /tools: tasks, calendar\n",
		"awaiting your approval on /tools: notes: npx -y notes\n",
		"found 2 errors, and the running config stays:\n  a: x\n  y\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}
