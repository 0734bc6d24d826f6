package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// TestManagerReconfigure applies a reload while a slow call runs on a server that did not
// change: the call completes with its result and that session is never redialled; a server
// whose allow_tools alone changed keeps its session too; a changed URL reconnects to the new
// server; a new server connects and lists; a removed stdio server is stopped, its process gone
// by the time Reconfigure returns.
func TestManagerReconfigure(t *testing.T) {
	slow := mcptest.ToolSpec{Name: "slow", Text: "slow result", ReadOnly: true, DelayMS: 1500}
	steady := mcptest.NewScripted(slow)
	t.Cleanup(steady.Close)
	steadySrv := newRestartable(t, steady.HTTPHandler())
	allowSrv := newRestartable(t, mcptest.NewScripted(echoTool, fixedTool).HTTPHandler())
	oldTarget := mcptest.NewScripted(echoTool)
	oldSrv := newRestartable(t, oldTarget.HTTPHandler())
	newSrv := newRestartable(t, mcptest.NewScripted(fixedTool).HTTPHandler())
	freshSrv := newRestartable(t, mcptest.NewScripted(errorTool).HTTPHandler())
	gone := newStdioServer(t, echoTool)

	servers := map[string]config.Server{
		"steady": {Type: config.TransportHTTP, URL: steadySrv.url("/mcp")},
		"allow":  {Type: config.TransportHTTP, URL: allowSrv.url("/mcp"), AllowTools: []string{"echo"}},
		"moving": {Type: config.TransportHTTP, URL: oldSrv.url("/mcp")},
		"gone":   gone.config(),
	}
	rec := newFakeReconciler()
	m := startManager(t, maps.Clone(servers), rec, fastOptions())
	for name := range servers {
		waitState(t, m, name, StateConnected, 10*time.Second)
	}
	waitFor(t, 5*time.Second, "the pid file", func() bool { return gone.currentPid() > 0 })
	pid := gone.currentPid()
	since := map[string]time.Time{"steady": status(m, "steady").Since, "allow": status(m, "allow").Since}
	// Connected is reported before the first list reaches the reconciler: wait for that list
	// so that a second one, not the first, is what the assertion below would catch.
	waitFor(t, 5*time.Second, "the steady server's first list", func() bool { return rec.count("steady") > 0 })
	steadyLists := rec.count("steady")

	type answer struct {
		out string
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := m.CallTool(context.Background(), "steady", "slow", nil)
		answered <- answer{res.Output, err}
	}()
	waitFor(t, 5*time.Second, "the slow call to arrive", func() bool { return steady.Calls("slow") == 1 })

	next := maps.Clone(servers)
	delete(next, "gone")
	next["allow"] = config.Server{Type: config.TransportHTTP, URL: allowSrv.url("/mcp"), AllowTools: []string{"echo", "list_tasks"}}
	next["moving"] = config.Server{Type: config.TransportHTTP, URL: newSrv.url("/mcp")}
	next["fresh"] = config.Server{Type: config.TransportHTTP, URL: freshSrv.url("/mcp")}
	got := m.Reconfigure(next)
	want := Reconfigured{Added: []string{"fresh"}, Restarted: []string{"moving"}, Updated: []string{"allow"}, Removed: []string{"gone"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Reconfigure (-want +got):\n%s", diff)
	}
	if alive(pid) {
		t.Errorf("the removed server's process %d outlived Reconfigure", pid)
	}
	var names []string
	for _, st := range m.Status() {
		names = append(names, st.Name)
	}
	if !slices.Equal(names, []string{"allow", "fresh", "moving", "steady"}) {
		t.Errorf("servers after Reconfigure: %v", names)
	}
	if _, err := m.CallTool(context.Background(), "gone", "echo", nil); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("a call to the removed server: %v", err)
	}

	select {
	case a := <-answered:
		if a.err != nil || a.out != "slow result" {
			t.Errorf("the call in flight on the unchanged server: %q, %v", a.out, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight never answered")
	}
	if got := m.AllowTools("allow"); !slices.Equal(got, []string{"echo", "list_tasks"}) {
		t.Errorf("allow_tools after Reconfigure: %v", got)
	}
	waitNames(t, rec, "moving", "list_tasks")
	waitNames(t, rec, "fresh", "delete_task")
	waitFor(t, 5*time.Second, "the old target's session to end", func() bool { return oldTarget.Sessions() == 0 })
	for name, was := range since {
		if st := status(m, name); st.State != StateConnected || !st.Since.Equal(was) {
			t.Errorf("%s was redialled: %+v (connected since %s)", name, st, was)
		}
	}
	if n := rec.count("steady"); n != steadyLists {
		t.Errorf("the unchanged server was listed again (%d lists, was %d)", n, steadyLists)
	}
	// The same config again changes nothing, the allow_tools applied above included.
	if again := m.Reconfigure(next); !cmp.Equal(again, Reconfigured{}) {
		t.Errorf("reloading the same config: %+v, want nothing done", again)
	}
}

// TestManagerReconfigureChangedCommandLine: a stdio server whose arguments changed is stopped,
// and the new command line waits for the owner's approval; it never starts before.
func TestManagerReconfigureChangedCommandLine(t *testing.T) {
	srv := newStdioServer(t, echoTool)
	first := srv.config()
	_, approvedDigest := StdioCommand(first)
	var asked sync.Map
	opts := fastOptions()
	opts.ApproveStdio = func(_ context.Context, server, _, digest string) (bool, error) {
		asked.Store(digest, true)
		return digest == approvedDigest, nil
	}
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"notes": first}, rec, opts)
	waitState(t, m, "notes", StateConnected, 10*time.Second)
	waitFor(t, 5*time.Second, "the pid file", func() bool { return srv.currentPid() > 0 })
	pid := srv.currentPid()

	changed := first
	changed.Args = append([]string{"-redefine-every", "1h"}, first.Args...)
	_, newDigest := StdioCommand(withName("notes", changed))
	if got := m.Reconfigure(map[string]config.Server{"notes": changed}); !slices.Equal(got.Restarted, []string{"notes"}) {
		t.Fatalf("Reconfigure: %+v", got)
	}
	if alive(pid) {
		t.Errorf("the old process %d still runs", pid)
	}
	waitState(t, m, "notes", StateAwaitingApproval, 5*time.Second)
	if _, ok := asked.Load(newDigest); !ok {
		t.Error("the new command line was never put to the owner")
	}
	if p := srv.currentPid(); p != pid {
		t.Errorf("a process started before approval (pid %d)", p)
	}
	if _, err := m.CallTool(context.Background(), "notes", "echo", nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("a call while awaiting approval: %v", err)
	}
}

// TestManagerReconfigureConcurrently: reloads that race each other are served one after the
// other, and the last one decides what runs; nothing is left running that is not configured,
// and a server removed once connected ends its session on the server. (A dial that a racing
// reload gives up is killed outright, so a session the server opened for it is not ended by
// Maven: that is why the ending is checked on a server of its own.)
func TestManagerReconfigureConcurrently(t *testing.T) {
	scripted := mcptest.NewScripted(echoTool)
	srv := newRestartable(t, scripted.HTTPHandler())
	server := func() config.Server { return config.Server{Type: config.TransportHTTP, URL: srv.url("/mcp")} }
	m := startManager(t, map[string]config.Server{"a": server()}, newFakeReconciler(), fastOptions())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			set := map[string]config.Server{"a": server(), fmt.Sprintf("s%d", i%3): server()}
			m.Reconfigure(set)
			m.Status()
			m.AllowTools("a")
		})
	}
	wg.Wait()
	m.Reconfigure(map[string]config.Server{"a": server(), "z": server()})
	waitState(t, m, "z", StateConnected, 10*time.Second)
	var names []string
	for _, st := range m.Status() {
		names = append(names, st.Name)
	}
	if !slices.Equal(names, []string{"a", "z"}) {
		t.Errorf("servers: %v", names)
	}
	m.mu.Lock()
	runs := len(m.runs)
	m.mu.Unlock()
	if runs != 2 {
		t.Errorf("%d supervisors run for 2 servers", runs)
	}

	removed := mcptest.NewScripted(echoTool)
	removedSrv := newRestartable(t, removed.HTTPHandler())
	m.Reconfigure(map[string]config.Server{"a": server(), "z": server(), "y": {Type: config.TransportHTTP, URL: removedSrv.url("/mcp")}})
	waitState(t, m, "y", StateConnected, 10*time.Second)
	if n := removed.Sessions(); n != 1 {
		t.Fatalf("y connected with %d sessions on its server", n)
	}
	m.Reconfigure(map[string]config.Server{"a": server(), "z": server()})
	waitFor(t, 5*time.Second, "the removed server's session to end", func() bool { return removed.Sessions() == 0 })
}

// TestManagerReconfigureBeforeRunAndAfterClose: servers added before Run start with it, a new
// server that needs a secret is locked until SetSecrets, and after Close nothing changes.
func TestManagerReconfigureBeforeRunAndAfterClose(t *testing.T) {
	srv := newRestartable(t, mcptest.NewScripted(echoTool).HTTPHandler())
	m := NewManager(nil, newFakeReconciler(), fastOptions(), testLogger(t))
	t.Cleanup(func() { m.Close() })
	if got := m.Reconfigure(map[string]config.Server{"early": {Type: config.TransportHTTP, URL: srv.url("/mcp")}}); !slices.Equal(got.Added, []string{"early"}) {
		t.Fatalf("before Run: %+v", got)
	}
	if st := status(m, "early"); st.State != StateConnecting {
		t.Errorf("before Run: %+v", st)
	}
	m.Run(context.Background())
	waitState(t, m, "early", StateConnected, 10*time.Second)

	m.Reconfigure(map[string]config.Server{
		"early":  {Type: config.TransportHTTP, URL: srv.url("/mcp")},
		"sealed": {Type: config.TransportHTTP, URL: srv.url("/mcp"), Headers: map[string]string{"X-Key": "${secret:k}"}},
	})
	waitState(t, m, "sealed", StateLocked, 5*time.Second)
	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "v", true }))
	waitState(t, m, "sealed", StateConnected, 10*time.Second)

	m.Close()
	if got := m.Reconfigure(nil); len(got.Removed) != 0 || len(m.Status()) != 2 {
		t.Errorf("after Close: %+v, %d servers", got, len(m.Status()))
	}
}
