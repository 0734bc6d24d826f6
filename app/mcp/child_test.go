package mcp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"maven/app/config"
)

// lockedBuffer is a log written by the supervisors' goroutines and read by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startLoggedManager is startManager with the log kept for the test to read.
func startLoggedManager(t *testing.T, servers map[string]config.Server, opts ManagerOptions) (*Manager, *lockedBuffer) {
	t.Helper()
	for name, s := range servers {
		s.Name = name
		servers[name] = s
	}
	log := &lockedBuffer{}
	m := NewManager(servers, newFakeReconciler(), opts, slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	m.Run(context.Background())
	t.Cleanup(func() {
		m.Close()
		if t.Failed() {
			t.Logf("manager log:\n%s", log.String())
		}
	})
	return m, log
}

// TestStdioServerThatDiesSaysWhy: a stdio server that writes why on stderr and exits 1, through
// the real manager and a real process. Its status says how it exited and its last lines on
// stderr, with the secret values it was given masked; the log says so once per failure, at
// warn, not once per line.
func TestStdioServerThatDiesSaysWhy(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "brave-search")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
echo "Brave Search MCP server starting" >&2
echo "token $TOKEN and key $OTHER_API_KEY" >&2
printf 'BRAVE_API_KEY is required' >&2
exit 1
`), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := fastOptions()
	opts.Secrets = bytesLookup(func(string) (string, bool) { return "hunter2-sealed", true })
	m, log := startLoggedManager(t, map[string]config.Server{
		"brave": {Type: config.TransportStdio, Command: script,
			Env: map[string]string{"TOKEN": "${secret:tok}", "OTHER_API_KEY": "literal-key-5678"}},
	}, opts)

	var st ServerStatus
	waitFor(t, 10*time.Second, "the exit shown", func() bool {
		st = status(m, "brave")
		return st.LastStderr != ""
	})
	if st.State != StateBackoff || st.LastError != "exited with status 1: BRAVE_API_KEY is required" {
		t.Errorf("state %s, last error %q", st.State, st.LastError)
	}
	want := "Brave Search MCP server starting\ntoken *** and key ***\nBRAVE_API_KEY is required"
	if st.LastStderr != want {
		t.Errorf("last stderr %q, want %q", st.LastStderr, want)
	}

	waitFor(t, 10*time.Second, "four failures logged", func() bool { return strings.Count(log.String(), `msg="mcp server exited"`) >= 4 })
	out := log.String()
	for _, secret := range []string{"hunter2-sealed", "literal-key-5678"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log shows %q", secret)
		}
	}
	if strings.Contains(out, "client is closing") {
		t.Error("a failure says the client is closing, not how the server exited")
	}
	exits := strings.Count(out, `msg="mcp server exited"`)
	for line := range strings.SplitSeq(out, "\n") {
		if strings.Contains(line, "level=WARN") && !strings.Contains(line, `msg="mcp server exited"`) {
			t.Errorf("a warning that is not the exit: %s", line)
		}
		if strings.Contains(line, `msg="mcp server exited"`) && !strings.Contains(line, `status="exited with status 1"`) {
			t.Errorf("the exit's warning has no status: %s", line)
		}
	}
	if starts := strings.Count(out, "BRAVE_API_KEY is required\"\n"); exits > starts {
		t.Errorf("%d exit warnings for %d starts", exits, starts)
	}
}

// TestMissingCommandWaitsForAReload: a stdio command that is not on PATH says so plainly and is
// not looked for again for hours; once the owner installs it, a reload starts it at once.
func TestMissingCommandWaitsForAReload(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := newStdioServer(t, echoTool)
	cfg := srv.config()
	cfg.Command = "maven-test-server-not-yet-installed"
	servers := map[string]config.Server{"later": cfg}
	m, log := startLoggedManager(t, servers, fastOptions())

	waitFor(t, 10*time.Second, "failed", func() bool { return status(m, "later").State == StateFailed })
	if st := status(m, "later"); !strings.HasPrefix(st.LastError, "command not found: maven-test-server-not-yet-installed (") {
		t.Errorf("last error %q", st.LastError)
	}
	waitFor(t, 10*time.Second, "the wait logged", func() bool { return strings.Contains(log.String(), "retry_in=6h0m0s") })

	if err := os.Symlink(scriptedBinary, filepath.Join(bin, cfg.Command)); err != nil {
		t.Fatal(err)
	}
	m.Reconfigure(servers)
	waitState(t, m, "later", StateConnected, 10*time.Second)
}

// fakeConn is a connection whose reads and writes fail as a dead process's pipes do.
type fakeConn struct {
	readErr, writeErr, closeErr error
}

func (c fakeConn) Read(context.Context) (jsonrpc.Message, error) { return nil, c.readErr }
func (c fakeConn) Write(context.Context, jsonrpc.Message) error  { return c.writeErr }
func (c fakeConn) Close() error                                  { return c.closeErr }
func (c fakeConn) SessionID() string                             { return "" }

// A process that died is told from one Maven closed by which came first: the end of its output
// (or a broken pipe to it), or Maven's close.
func TestChildConnSeesWhoEndedIt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		steps  func(c *childConn)
		exited bool
	}{
		{"its output ended", func(c *childConn) { c.Read(context.Background()); c.Close() }, true},
		{"a broken pipe to it", func(c *childConn) { c.Write(context.Background(), nil); c.Close() }, true},
		{"Maven closed it", func(c *childConn) { c.Close(); c.Read(context.Background()); c.Write(context.Background(), nil) }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			child := &stdioChild{stderr: newStderrTail(slog.New(slog.DiscardHandler), func(s string) string { return s })}
			c := &childConn{Connection: fakeConn{readErr: io.EOF, writeErr: &os.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE}}, child: child}
			tt.steps(c)
			if exit := child.exit(); (exit != nil) != tt.exited || exit != nil && exit.Status != "exited with status 0" {
				t.Errorf("exit %+v, want exited %v", exit, tt.exited)
			}
		})
	}
}
