package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// scriptedBinary is scripted-mcp, built once per test binary by TestMain.
var scriptedBinary string

func TestMain(m *testing.M) {
	// The test binary doubles as the hostile stdio server and the crash test's child process.
	switch os.Getenv(helperEnv) {
	case "":
	case "hostile-stdio":
		os.Exit(runHostileStdio())
	case "crash-reconcile":
		os.Exit(runCrashChild())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperEnv, os.Getenv(helperEnv))
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "maven-mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptedBinary, err = mcptest.BuildCommand(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fastOptions are short timeouts for tests; no test waits on RefreshInterval.
func fastOptions() ManagerOptions {
	return ManagerOptions{
		RefreshInterval:   time.Hour,
		RefreshGap:        10 * time.Millisecond,
		DialTimeout:       5 * time.Second,
		ListTimeout:       5 * time.Second,
		CallTimeout:       5 * time.Second,
		KeepAlive:         200 * time.Millisecond,
		BackoffMin:        20 * time.Millisecond,
		BackoffMax:        200 * time.Millisecond,
		TerminateDuration: 200 * time.Millisecond,
	}
}

// fakeReconciler records every Reconcile call.
type fakeReconciler struct {
	mu    sync.Mutex
	lists map[string][][]*sdk.Tool
	// fail, if set, makes Reconcile fail (the call is still recorded).
	fail func(server string) error
}

func newFakeReconciler() *fakeReconciler {
	return &fakeReconciler{lists: map[string][][]*sdk.Tool{}}
}

func (f *fakeReconciler) Reconcile(_ context.Context, server string, tools []*sdk.Tool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists[server] = append(f.lists[server], tools)
	if f.fail != nil {
		return f.fail(server)
	}
	return nil
}

// count returns how many times server was reconciled.
func (f *fakeReconciler) count(server string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lists[server])
}

// last returns the tools of the last reconcile of server, nil if none.
func (f *fakeReconciler) last(server string) []*sdk.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.lists[server]
	if len(l) == 0 {
		return nil
	}
	return l[len(l)-1]
}

// lastNames returns the sorted names of the last reconcile of server.
func (f *fakeReconciler) lastNames(server string) []string {
	var names []string
	for _, t := range f.last(server) {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// status returns the status of one server.
func status(m *Manager, name string) ServerStatus {
	for _, st := range m.Status() {
		if st.Name == name {
			return st
		}
	}
	return ServerStatus{}
}

func waitState(t *testing.T, m *Manager, name string, want State, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%s to be %s", name, want), func() bool { return status(m, name).State == want })
}

func waitNames(t *testing.T, rec *fakeReconciler, server string, want ...string) {
	t.Helper()
	slices.Sort(want)
	waitFor(t, 10*time.Second, fmt.Sprintf("%s reconciled with %v", server, want), func() bool {
		return slices.Equal(rec.lastNames(server), want)
	})
}

// startManager runs a Manager over servers and closes it when the test ends.
func startManager(t *testing.T, servers map[string]config.Server, rec Reconciler, opts ManagerOptions) *Manager {
	t.Helper()
	for name, s := range servers {
		s.Name = name
		servers[name] = s
	}
	m := NewManager(servers, rec, opts, testLogger(t))
	m.Run(context.Background())
	t.Cleanup(func() { m.Close() })
	return m
}

// testLogger writes to the test log, so a failure shows what the supervisors saw. It goes
// quiet once the test's cleanups have run: sdk goroutines may log a moment after Close.
func testLogger(t *testing.T) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// restartable is an httptest server that can be stopped and started again on the same address.
type restartable struct {
	t       *testing.T
	handler http.Handler
	addr    string
	srv     *httptest.Server
}

func newRestartable(t *testing.T, h http.Handler) *restartable {
	r := &restartable{t: t, handler: h}
	r.start()
	t.Cleanup(r.stop)
	return r
}

func (r *restartable) start() {
	r.t.Helper()
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		r.t.Fatalf("listen %s: %v", addr, err)
	}
	r.addr = l.Addr().String()
	r.srv = httptest.NewUnstartedServer(r.handler)
	r.srv.Listener.Close()
	r.srv.Listener = l
	r.srv.Start()
}

// stop closes the server and every connection to it, long-lived event streams included.
func (r *restartable) stop() {
	if r.srv == nil {
		return
	}
	r.srv.CloseClientConnections()
	r.srv.Close()
	r.srv = nil
}

func (r *restartable) url(path string) string { return "http://" + r.addr + path }
