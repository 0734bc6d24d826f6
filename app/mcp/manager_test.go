package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

var (
	echoTool  = mcptest.ToolSpec{Name: "echo", Description: "Echoes its arguments.", ReadOnly: true, Echo: true}
	fixedTool = mcptest.ToolSpec{Name: "list_tasks", Description: "Lists tasks.", ReadOnly: true, Text: "buy milk\nwater plants"}
	errorTool = mcptest.ToolSpec{Name: "delete_task", Description: "Deletes a task.", Text: "no such task", IsError: true}
)

// TestManagerOverHTTPTransports drives a scripted server over streamable HTTP and SSE: connect,
// reconcile, list_changed after Add, Remove and Redefine, and calls.
func TestManagerOverHTTPTransports(t *testing.T) {
	for _, tr := range []struct {
		transport config.Transport
		handler   func(*mcptest.Scripted) http.Handler
		path      string
	}{
		{config.TransportHTTP, (*mcptest.Scripted).HTTPHandler, "/mcp"},
		{config.TransportSSE, (*mcptest.Scripted).SSEHandler, "/sse"},
	} {
		t.Run(string(tr.transport), func(t *testing.T) {
			scripted := mcptest.NewScripted(echoTool, fixedTool, errorTool)
			srv := newRestartable(t, tr.handler(scripted))
			rec := newFakeReconciler()
			m := startManager(t, map[string]config.Server{
				"tasks": {Type: tr.transport, URL: srv.url(tr.path)},
			}, rec, fastOptions())

			waitNames(t, rec, "tasks", "echo", "list_tasks", "delete_task")
			st := status(m, "tasks")
			if st.State != StateConnected || st.Tools != 3 || st.Transport != string(tr.transport) ||
				st.Trust != TrustLoopback || st.Target != srv.url(tr.path) || st.Since.IsZero() {
				t.Errorf("status = %+v", st)
			}

			// list_changed, announced by the sdk when the tool set changes, refreshes promptly.
			scripted.Add(mcptest.ToolSpec{Name: "add_task", Text: "added"})
			waitNames(t, rec, "tasks", "echo", "list_tasks", "delete_task", "add_task")
			scripted.Remove("delete_task")
			waitNames(t, rec, "tasks", "echo", "list_tasks", "add_task")
			scripted.Redefine(mcptest.ToolSpec{Name: "list_tasks", Description: "Now it writes.", Text: "x"})
			waitFor(t, 10*time.Second, "the redefinition reconciled", func() bool {
				for _, tool := range rec.last("tasks") {
					if tool.Name == "list_tasks" {
						return tool.Description == "Now it writes." && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint)
					}
				}
				return false
			})
			waitFor(t, 5*time.Second, "the tool count", func() bool { return status(m, "tasks").Tools == 3 })

			res, err := m.CallTool(context.Background(), "tasks", "echo", map[string]any{"message": "hello"})
			if err != nil {
				t.Fatalf("CallTool(echo): %v", err)
			}
			if res.IsError || res.Output != `{"message":"hello"}` {
				t.Errorf("CallTool(echo) = %+v", res)
			}
			res, err = m.CallTool(context.Background(), "tasks", "add_task", nil)
			if err != nil || res.Output != "added" || res.IsError {
				t.Errorf("CallTool(add_task) = %+v, %v", res, err)
			}
			if got := scripted.Calls("echo"); got != 1 {
				t.Errorf("the server saw %d calls of echo, want 1", got)
			}

			// Calling a tool the server no longer has is the server's answer, not a crash.
			if _, err := m.CallTool(context.Background(), "tasks", "delete_task", map[string]any{}); err == nil {
				t.Error("CallTool of a removed tool succeeded")
			}
		})
	}
}

func TestManagerToolErrorIsAResult(t *testing.T) {
	scripted := mcptest.NewScripted(errorTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
	waitState(t, m, "tasks", StateConnected, 10*time.Second)

	res, err := m.CallTool(context.Background(), "tasks", "delete_task", map[string]any{"id": 7})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	if !res.IsError || res.Output != "no such task" || res.ExitCode != 0 {
		t.Errorf("CallTool = %+v, want an IsError result with the tool's text", res)
	}
}

func TestManagerServerStoppedAndRestarted(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"tasks": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
	waitNames(t, rec, "tasks", "echo")

	srv.stop()
	// Keepalive pings notice the dead server; the supervisor goes to backoff.
	waitFor(t, 10*time.Second, "tasks to leave connected", func() bool {
		s := status(m, "tasks").State
		return s == StateBackoff || s == StateConnecting
	})
	reconciled := rec.count("tasks")
	start := time.Now()
	_, err := m.CallTool(context.Background(), "tasks", "echo", map[string]any{"message": "x"})
	if !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool on a stopped server: %v, want ErrNotConnected", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("CallTool on a stopped server took %s", d)
	}
	waitFor(t, 10*time.Second, "a failed redial", func() bool { return strings.Contains(status(m, "tasks").LastError, "dial:") })
	if got := rec.count("tasks"); got != reconciled {
		t.Errorf("a stopped server was reconciled %d more times", got-reconciled)
	}

	srv.start()
	waitState(t, m, "tasks", StateConnected, 10*time.Second)
	waitFor(t, 10*time.Second, "a reconcile after the restart", func() bool { return rec.count("tasks") > reconciled })
	res, err := m.CallTool(context.Background(), "tasks", "echo", map[string]any{"message": "back"})
	if err != nil || res.Output != `{"message":"back"}` {
		t.Errorf("CallTool after restart = %+v, %v", res, err)
	}
}

func TestManagerLockedServerIsNeverDialled(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	var authMu sync.Mutex
	var auths []string
	h := scripted.HTTPHandler()
	srv := newRestartable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authMu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		authMu.Unlock()
		h.ServeHTTP(w, r)
	}))
	control := mcptest.NewScripted(echoTool)
	controlSrv := newRestartable(t, control.HTTPHandler())

	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{
		"vault":   {Type: config.TransportHTTP, URL: srv.url("/mcp"), Headers: map[string]string{"Authorization": "Bearer ${secret:tok}"}},
		"control": {Type: config.TransportHTTP, URL: controlSrv.url("/mcp")},
	}, rec, fastOptions())

	// The unlocked server connecting shows the supervisors ran; the locked one had the same
	// time and never dialled.
	waitNames(t, rec, "control", "echo")
	if st := status(m, "vault"); st.State != StateLocked {
		t.Errorf("vault state = %s, want locked", st.State)
	}
	if n := scripted.Requests(); n != 0 {
		t.Fatalf("a locked server received %d requests", n)
	}
	if _, err := m.CallTool(context.Background(), "vault", "echo", nil); !errors.Is(err, ErrLocked) {
		t.Errorf("CallTool on a locked server: %v, want ErrLocked", err)
	}
	if rec.count("vault") != 0 {
		t.Error("a locked server was reconciled")
	}

	// Unlocked with the secret missing: still locked, and the status names what is missing.
	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "", false }))
	waitFor(t, 5*time.Second, "a missing-secret message", func() bool {
		st := status(m, "vault")
		return st.State == StateLocked && strings.Contains(st.LastError, `"tok"`)
	})
	if n := scripted.Requests(); n != 0 {
		t.Fatalf("a server missing its secret received %d requests", n)
	}

	m.SetSecrets(bytesLookup(func(name string) (string, bool) {
		if name == "tok" {
			return "s3cret-token", true
		}
		return "", false
	}))
	waitNames(t, rec, "vault", "echo")
	waitState(t, m, "vault", StateConnected, 5*time.Second)
	authMu.Lock()
	for i, a := range auths {
		if a != "Bearer s3cret-token" {
			t.Errorf("request %d had Authorization %q", i, a)
		}
	}
	authMu.Unlock()
	if st := status(m, "vault"); strings.Contains(st.Target, "s3cret") {
		t.Errorf("Target shows the secret: %q", st.Target)
	}
	res, err := m.CallTool(context.Background(), "vault", "echo", map[string]any{"a": 1})
	if err != nil || res.Output != `{"a":1}` {
		t.Errorf("CallTool after unlock = %+v, %v", res, err)
	}

	// Locking again ends the session at once and refuses calls; the server sees it close.
	reconciled := rec.count("vault")
	m.SetSecrets(nil)
	if st := status(m, "vault"); st.State != StateLocked {
		t.Errorf("state right after SetSecrets(nil) = %s, want locked", st.State)
	}
	if _, err := m.CallTool(context.Background(), "vault", "echo", nil); !errors.Is(err, ErrLocked) {
		t.Errorf("CallTool after lock: %v, want ErrLocked", err)
	}
	waitFor(t, 5*time.Second, "the locked session to close", func() bool { return scripted.Sessions() == 0 })
	if st := status(m, "control"); st.State != StateConnected {
		t.Errorf("locking touched a server without secrets: %s", st.State)
	}
	if got := rec.count("vault"); got != reconciled {
		t.Errorf("locking reconciled the server %d more times", got-reconciled)
	}
}

func TestManagerDisabledServerIsNeverDialled(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	control := mcptest.NewScripted(echoTool)
	controlSrv := newRestartable(t, control.HTTPHandler())
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{
		"off":     {Type: config.TransportHTTP, URL: srv.url("/mcp"), Disabled: true},
		"control": {Type: config.TransportHTTP, URL: controlSrv.url("/mcp")},
	}, rec, fastOptions())

	waitNames(t, rec, "control", "echo")
	if st := status(m, "off"); st.State != StateDisabled {
		t.Errorf("state = %s, want disabled", st.State)
	}
	if n := scripted.Requests(); n != 0 {
		t.Errorf("a disabled server received %d requests", n)
	}
	if _, err := m.CallTool(context.Background(), "off", "echo", nil); !errors.Is(err, ErrDisabled) {
		t.Errorf("CallTool on a disabled server: %v, want ErrDisabled", err)
	}
	if _, err := m.CallTool(context.Background(), "nope", "echo", nil); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("CallTool on an unknown server: %v, want ErrUnknownServer", err)
	}
}

func TestManagerBlackHoledEndpoint(t *testing.T) {
	for _, tr := range []struct {
		transport config.Transport
		path      string
	}{{config.TransportHTTP, "/mcp"}, {config.TransportSSE, "/sse"}} {
		t.Run(string(tr.transport), func(t *testing.T) {
			addr := mcptest.BlackHoles(t, 1)[0]
			opts := fastOptions()
			opts.DialTimeout = 300 * time.Millisecond
			rec := newFakeReconciler()
			servers := map[string]config.Server{"hole": {Name: "hole", Type: tr.transport, URL: "http://" + addr + tr.path}}
			m := NewManager(servers, rec, opts, testLogger(t))

			start := time.Now()
			m.Run(context.Background())
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("Run took %s: it must not wait for a dial", d)
			}
			defer func() {
				start := time.Now()
				m.Close()
				if d := time.Since(start); d > 3*time.Second {
					t.Errorf("Close took %s", d)
				}
			}()

			start = time.Now()
			_, err := m.CallTool(context.Background(), "hole", "echo", nil)
			if !errors.Is(err, ErrNotConnected) {
				t.Errorf("CallTool while dialling: %v, want ErrNotConnected", err)
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Errorf("CallTool took %s: it must not wait for the dial", d)
			}

			waitFor(t, 5*time.Second, "backoff after the dial timeout", func() bool {
				st := status(m, "hole")
				return st.State == StateBackoff && strings.Contains(st.LastError, "no answer within")
			})
			if d := time.Since(start); d < opts.DialTimeout {
				t.Errorf("backoff after %s, before the dial timeout of %s", d, opts.DialTimeout)
			}
			if rec.count("hole") != 0 {
				t.Error("a black-holed server was reconciled")
			}
		})
	}
}

func TestManagerIncompleteListIsNotReconciled(t *testing.T) {
	many := func(n int) []mcptest.ToolSpec {
		specs := make([]mcptest.ToolSpec, n)
		for i := range specs {
			specs[i] = mcptest.ToolSpec{Name: fmt.Sprintf("tool_%03d", i), Text: "x"}
		}
		return specs
	}
	tests := []struct {
		name     string
		scripted *mcptest.Scripted
		maxTools int
		wantErr  string
	}{
		{"over the page cap", mcptest.New(mcptest.Options{PageSize: 1}, many(MaxListPages+1)...), 0, "pages"},
		{"over the tool cap", mcptest.New(mcptest.Options{PageSize: 2}, many(5)...), 4, "more than 4 tools"},
		{"list fails", func() *mcptest.Scripted {
			s := mcptest.NewScripted(echoTool)
			s.FailList(true)
			return s
		}(), 0, "scripted tools/list failure"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRestartable(t, tt.scripted.HTTPHandler())
			rec := newFakeReconciler()
			servers := map[string]config.Server{"s": {Name: "s", Type: config.TransportHTTP, URL: srv.url("/mcp")}}
			m := NewManager(servers, rec, fastOptions(), testLogger(t))
			if tt.maxTools > 0 {
				m.maxTools = tt.maxTools
			}
			m.Run(context.Background())
			defer m.Close()

			waitFor(t, 10*time.Second, "the list error in the status", func() bool {
				return strings.Contains(status(m, "s").LastError, tt.wantErr)
			})
			st := status(m, "s")
			if st.State != StateConnected {
				t.Errorf("state = %s: a failed list does not end the session", st.State)
			}
			if st.Tools != 0 {
				t.Errorf("Tools = %d from an incomplete list", st.Tools)
			}
			if n := rec.count("s"); n != 0 {
				t.Fatalf("Reconcile called %d times with an incomplete list", n)
			}
			if _, err := m.CallTool(context.Background(), "s", tt.scripted.Tools()[0], nil); err != nil {
				t.Errorf("CallTool on a server whose list failed: %v", err)
			}
		})
	}

	t.Run("a list that works again is reconciled", func(t *testing.T) {
		s := mcptest.NewScripted(echoTool)
		s.FailList(true)
		srv := newRestartable(t, s.HTTPHandler())
		rec := newFakeReconciler()
		m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
		waitFor(t, 10*time.Second, "the list error", func() bool { return status(m, "s").LastError != "" })
		s.FailList(false)
		// The retry after a failed list, or list_changed, brings it in.
		s.Add(fixedTool)
		waitNames(t, rec, "s", "echo", "list_tasks")
		waitFor(t, 5*time.Second, "LastError cleared", func() bool { return status(m, "s").LastError == "" })
	})
}

func TestManagerStatusSortedAndRedacted(t *testing.T) {
	rec := newFakeReconciler()
	m := NewManager(map[string]config.Server{
		"zeta":  {Name: "zeta", Type: config.TransportHTTP, URL: "https://user:pw@tasks.example/mcp?token=${secret:tok}", Disabled: true},
		"alpha": {Name: "alpha", Type: config.TransportStdio, Command: "server", Args: []string{"--key", "${secret:k}"}},
		"mid":   {Name: "mid", Type: config.TransportSSE, URL: "http://10.0.0.2/sse"},
	}, rec, fastOptions(), nil)
	defer m.Close()
	got := m.Status()
	if len(got) != 3 || got[0].Name != "alpha" || got[1].Name != "mid" || got[2].Name != "zeta" {
		t.Fatalf("Status order = %v", got)
	}
	want := []struct {
		state  State
		trust  string
		target string
	}{
		{StateLocked, TrustLocalProcess, "server --key ${secret:k}"},
		{StateConnecting, TrustRemotePlaintext, "http://10.0.0.2/sse"},
		{StateDisabled, TrustRemoteTLS, "https://***@tasks.example/mcp?token=***"},
	}
	for i, w := range want {
		if got[i].State != w.state || got[i].Trust != w.trust || got[i].Target != w.target || got[i].TrustText == "" {
			t.Errorf("%s: %+v, want state %s trust %s target %q", got[i].Name, got[i], w.state, w.trust, w.target)
		}
	}
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"name"`, `"transport"`, `"target"`, `"state"`, `"trust"`, `"trust_text"`, `"last_error"`, `"since"`, `"tools"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
}

func TestManagerErrorsNeverShowSecrets(t *testing.T) {
	// A closed port: the dial fails at once, and the HTTP client's error quotes the URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.Secrets = bytesLookup(func(string) (string, bool) { return "hunter2-secret", true })
	m := startManager(t, map[string]config.Server{
		"s": {Type: config.TransportHTTP, URL: "http://" + addr + "/mcp?token=${secret:tok}"},
	}, rec, opts)
	waitFor(t, 5*time.Second, "a dial error", func() bool { return status(m, "s").LastError != "" })
	if st := status(m, "s"); strings.Contains(st.LastError, "hunter2") || strings.Contains(st.Target, "hunter2") {
		t.Errorf("status shows the secret: %+v", st)
	}
}

func TestManagerFailedCommand(t *testing.T) {
	rec := newFakeReconciler()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := startManager(t, map[string]config.Server{
		"missing":  {Type: config.TransportStdio, Command: "maven-no-such-mcp-server"},
		"noexec":   {Type: config.TransportStdio, Command: notExec},
		"badcwd":   {Type: config.TransportStdio, Command: scriptedBinary, Args: []string{"tools.json"}, Cwd: filepath.Join(dir, "gone")},
		"absolute": {Type: config.TransportStdio, Command: filepath.Join(dir, "nothing-here")},
	}, rec, fastOptions())
	for name, want := range map[string]string{
		"missing":  "command not found: maven-no-such-mcp-server (",
		"noexec":   "not executable",
		"badcwd":   "working directory",
		"absolute": "command not found: " + filepath.Join(dir, "nothing-here") + " (no such file)",
	} {
		waitFor(t, 5*time.Second, name+" failed", func() bool {
			st := status(m, name)
			return st.State == StateFailed && strings.Contains(st.LastError, want)
		})
		if _, err := m.CallTool(context.Background(), name, "x", nil); !errors.Is(err, ErrNotConnected) {
			t.Errorf("CallTool on failed %s: %v", name, err)
		}
	}
}

// stdioServer writes a tools file and returns a config running scripted-mcp on it.
type stdioServer struct {
	dir, tools, calls, pid string
}

func newStdioServer(t *testing.T, specs ...mcptest.ToolSpec) stdioServer {
	t.Helper()
	dir := t.TempDir()
	s := stdioServer{dir: dir, tools: filepath.Join(dir, "tools.json"), calls: filepath.Join(dir, "calls.log"), pid: filepath.Join(dir, "pid")}
	if err := mcptest.WriteTools(s.tools, specs...); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s stdioServer) config() config.Server {
	return config.Server{Type: config.TransportStdio, Command: scriptedBinary,
		Args: []string{"-calls", s.calls, "-pid", s.pid, s.tools}}
}

// currentPid returns the pid scripted-mcp wrote, 0 if none yet.
func (s stdioServer) currentPid() int {
	b, err := os.ReadFile(s.pid)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(b))
	return pid
}

func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

func TestManagerStdio(t *testing.T) {
	srv := newStdioServer(t, echoTool, fixedTool)
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"local": srv.config()}, rec, fastOptions())
	waitNames(t, rec, "local", "echo", "list_tasks")
	st := status(m, "local")
	if st.Trust != TrustLocalProcess || st.Transport != "stdio" || !strings.HasPrefix(st.Target, scriptedBinary+" -calls") {
		t.Errorf("status = %+v", st)
	}

	res, err := m.CallTool(context.Background(), "local", "echo", map[string]any{"message": "over stdio"})
	if err != nil || res.Output != `{"message":"over stdio"}` {
		t.Errorf("CallTool = %+v, %v", res, err)
	}
	calls, err := os.ReadFile(srv.calls)
	if err != nil || string(calls) != "echo {\"message\":\"over stdio\"}\n" {
		t.Errorf("calls file = %q, %v", calls, err)
	}

	// The server changes its list (SIGHUP re-reads the file) and announces list_changed.
	waitFor(t, 5*time.Second, "the pid file", func() bool { return srv.currentPid() > 0 })
	pid := srv.currentPid()
	if err := mcptest.WriteTools(srv.tools, echoTool, errorTool); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitNames(t, rec, "local", "echo", "delete_task")

	// A crash: the supervisor notices, backs off and starts a new process.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new process", func() bool {
		p := srv.currentPid()
		return p != pid && alive(p) && status(m, "local").State == StateConnected
	})
	res, err = m.CallTool(context.Background(), "local", "delete_task", nil)
	if err != nil || !res.IsError || res.Output != "no such task" {
		t.Errorf("CallTool after the restart = %+v, %v", res, err)
	}

	// Close leaves no child behind.
	newPid := srv.currentPid()
	m.Close()
	if alive(newPid) {
		t.Errorf("scripted-mcp (pid %d) is still running after Close", newPid)
	}
	if _, err := m.CallTool(context.Background(), "local", "echo", nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool after Close: %v, want ErrNotConnected", err)
	}
}

func TestManagerStdioEnvironment(t *testing.T) {
	t.Setenv("MAVEN_TEST_DAEMON_ONLY", "must not leak")
	srv := newStdioServer(t,
		mcptest.ToolSpec{Name: "token", Env: "API_TOKEN", Text: "unset"},
		mcptest.ToolSpec{Name: "leak", Env: "MAVEN_TEST_DAEMON_ONLY"},
		mcptest.ToolSpec{Name: "home", Env: "HOME"},
	)
	cfg := srv.config()
	cfg.Env = map[string]string{"API_TOKEN": "tok-${secret:api}"}
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.Secrets = bytesLookup(func(name string) (string, bool) { return "value-of-" + name, name == "api" })
	opts.Getenv = func(k string) string {
		if k == "HOME" {
			return "/home/maven-test"
		}
		return os.Getenv(k)
	}
	m := startManager(t, map[string]config.Server{"env": cfg}, rec, opts)
	waitState(t, m, "env", StateConnected, 10*time.Second)

	for tool, want := range map[string]string{"token": "tok-value-of-api", "leak": "", "home": "/home/maven-test"} {
		res, err := m.CallTool(context.Background(), "env", tool, nil)
		if err != nil || res.Output != want {
			t.Errorf("%s: CallTool = %+v, %v; want output %q", tool, res, err, want)
		}
	}
	if st := status(m, "env"); strings.Contains(st.Target, "value-of") {
		t.Errorf("Target shows a secret: %q", st.Target)
	}
}

func TestManagerCallEndsWithTheSession(t *testing.T) {
	slow := mcptest.ToolSpec{Name: "slow", Text: "done", DelayMS: 10000}
	scripted := mcptest.NewScripted(slow)
	srv := newRestartable(t, scripted.HTTPHandler())
	t.Cleanup(scripted.Close)
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.Secrets = bytesLookup(func(string) (string, bool) { return "v", true })
	m := startManager(t, map[string]config.Server{
		"s": {Type: config.TransportHTTP, URL: srv.url("/mcp"), Headers: map[string]string{"X-Key": "${secret:k}"}},
	}, rec, opts)
	waitState(t, m, "s", StateConnected, 10*time.Second)

	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(context.Background(), "s", "slow", nil)
		errc <- err
	}()
	waitFor(t, 5*time.Second, "the call to arrive", func() bool { return scripted.Calls("slow") == 1 })
	start := time.Now()
	m.SetSecrets(nil)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrNotConnected) {
			t.Errorf("call cut by a lock: %v, want ErrNotConnected", err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("the call ended %s after the lock", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a call in flight outlived the lock")
	}
}

func TestManagerCallTimeout(t *testing.T) {
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "slow", Text: "done", DelayMS: 5000})
	srv := newRestartable(t, scripted.HTTPHandler())
	t.Cleanup(scripted.Close)
	opts := fastOptions()
	opts.CallTimeout = 200 * time.Millisecond
	m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, newFakeReconciler(), opts)
	waitState(t, m, "s", StateConnected, 10*time.Second)
	start := time.Now()
	_, err := m.CallTool(context.Background(), "s", "slow", nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("CallTool returned after %s with a 200ms timeout", d)
	}

}

func TestManagerCallCancelled(t *testing.T) {
	scripted := mcptest.NewScripted(mcptest.ToolSpec{Name: "slow", Text: "done", DelayMS: 5000})
	srv := newRestartable(t, scripted.HTTPHandler())
	t.Cleanup(scripted.Close)
	m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, newFakeReconciler(), fastOptions())
	waitState(t, m, "s", StateConnected, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "s", "slow", nil)
		errc <- err
	}()
	waitFor(t, 5*time.Second, "the call to arrive", func() bool { return scripted.Calls("slow") == 1 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool with a cancelled ctx = %v, want context.Canceled", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("CallTool ignored its cancelled context")
	}
	// The session survives a cancelled call.
	if st := status(m, "s"); st.State != StateConnected {
		t.Errorf("state after a cancelled call = %s", st.State)
	}
}

func TestManagerChangesFire(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, newFakeReconciler(), fastOptions())
	var fired atomic.Int32
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-m.Changes():
				fired.Add(1)
			case <-done:
				return
			}
		}
	}()
	defer close(done)
	waitState(t, m, "s", StateConnected, 10*time.Second)
	waitFor(t, 5*time.Second, "a change notification", func() bool { return fired.Load() > 0 })
}

func TestRequestRefreshCoalesces(t *testing.T) {
	m := NewManager(map[string]config.Server{"s": {Name: "s", Type: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp"}},
		newFakeReconciler(), ManagerOptions{}, nil)
	s := m.servers.Load().byName["s"]
	for range 100 {
		s.requestRefresh()
	}
	if n := len(s.refreshWanted); n != 1 {
		t.Errorf("%d refreshes pending after a storm, want 1", n)
	}
}

func TestAllowTools(t *testing.T) {
	m := NewManager(map[string]config.Server{
		"s": {Name: "s", Type: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp", AllowTools: []string{"list_tasks"}},
	}, newFakeReconciler(), ManagerOptions{}, nil)
	got := m.AllowTools("s")
	if len(got) != 1 || got[0] != "list_tasks" {
		t.Errorf("AllowTools = %v", got)
	}
	got[0] = "changed"
	if m.AllowTools("s")[0] != "list_tasks" {
		t.Error("AllowTools returned the config's own slice")
	}
	if m.AllowTools("nope") != nil {
		t.Error("AllowTools of an unknown server is not nil")
	}
}

func TestManagerPeriodicRefresh(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.RefreshInterval = 50 * time.Millisecond
	startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, opts)
	// No list_changed is sent: only the timer can bring these.
	waitFor(t, 10*time.Second, "periodic refreshes", func() bool { return rec.count("s") >= 3 })
}

func TestManagerReconcileErrorIsRetried(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	rec := newFakeReconciler()
	var failures atomic.Int32
	rec.fail = func(string) error {
		if failures.Add(1) == 1 {
			return errors.New("database is locked")
		}
		return nil
	}
	m := startManager(t, map[string]config.Server{"s": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}, rec, fastOptions())
	waitFor(t, 10*time.Second, "a retried reconcile", func() bool { return rec.count("s") >= 2 })
	waitFor(t, 5*time.Second, "the error cleared", func() bool {
		st := status(m, "s")
		return st.LastError == "" && st.Tools == 1 && st.State == StateConnected
	})
}

func TestManagerNewSecretsReconnect(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	var mu sync.Mutex
	var lastAuth string
	h := scripted.HTTPHandler()
	srv := newRestartable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastAuth = r.Header.Get("Authorization")
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	auth := func() string {
		mu.Lock()
		defer mu.Unlock()
		return lastAuth
	}
	rec := newFakeReconciler()
	opts := fastOptions()
	opts.Secrets = bytesLookup(func(string) (string, bool) { return "old", true })
	m := startManager(t, map[string]config.Server{
		"s": {Type: config.TransportHTTP, URL: srv.url("/mcp"), Headers: map[string]string{"Authorization": "Bearer ${secret:tok}"}},
	}, rec, opts)
	waitState(t, m, "s", StateConnected, 10*time.Second)
	if a := auth(); a != "Bearer old" {
		t.Fatalf("Authorization = %q", a)
	}
	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "new", true }))
	waitFor(t, 10*time.Second, "a session with the new secret", func() bool {
		return auth() == "Bearer new" && status(m, "s").State == StateConnected
	})
	if _, err := m.CallTool(context.Background(), "s", "echo", nil); err != nil || auth() != "Bearer new" {
		t.Errorf("CallTool = %v with Authorization %q", err, auth())
	}
}

func TestManagerSetSecretsNeverWaitsForADial(t *testing.T) {
	addr := mcptest.BlackHoles(t, 1)[0]
	opts := fastOptions()
	opts.DialTimeout = 10 * time.Second
	m := startManager(t, map[string]config.Server{
		"hole": {Type: config.TransportHTTP, URL: "http://" + addr + "/mcp", Headers: map[string]string{"X-Key": "${secret:k}"}},
	}, newFakeReconciler(), opts)
	waitState(t, m, "hole", StateLocked, 5*time.Second)

	start := time.Now()
	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "v", true }))
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("unlocking took %s", d)
	}
	waitState(t, m, "hole", StateConnecting, 5*time.Second)
	start = time.Now()
	m.SetSecrets(nil)
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("locking during a dial took %s", d)
	}
	if st := status(m, "hole"); st.State != StateLocked {
		t.Errorf("state after locking during a dial = %s", st.State)
	}
	start = time.Now()
	m.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s", d)
	}
}

// bytesLookup turns a lookup of strings into the vault's kind, which hands out a fresh buffer
// the caller zeroes.
func bytesLookup(f func(string) (string, bool)) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		v, ok := f(name)
		return []byte(v), ok
	}
}
