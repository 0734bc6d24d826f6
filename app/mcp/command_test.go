package mcp

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/config"
)

func TestStdioCommandDisplay(t *testing.T) {
	cfg := config.Server{
		Type: config.TransportStdio, Command: "npx",
		Args: []string{"-y", "@scope/server", "two words", "${secret:token}"},
		Env:  map[string]string{"TOKEN": "${secret:token}", "A": "x y", "B": "\u202ehidden"},
		Cwd:  "/srv/mcp",
	}
	display, digest := StdioCommand(cfg)
	want := `npx -y @scope/server "two words" ${secret:token}` + "\n" +
		`A="x y"` + "\n" + `B="\u202ehidden"` + "\n" + "TOKEN=${secret:token}" + "\n" + "cwd: /srv/mcp"
	if display != want {
		t.Errorf("display =\n%s\nwant\n%s", display, want)
	}
	if !strings.HasPrefix(digest, "sha256:") || len(digest) != len("sha256:")+64 {
		t.Errorf("digest = %q", digest)
	}
}

func TestStdioCommandDigestChangesWithEveryPart(t *testing.T) {
	base := config.Server{Type: config.TransportStdio, Command: "srv", Args: []string{"a"},
		Env: map[string]string{"K": "v"}, Cwd: "/tmp"}
	_, d0 := StdioCommand(base)
	same := base
	same.Env = map[string]string{"K": "v"}
	same.AllowTools = []string{"x"} // not part of the command line
	if _, d := StdioCommand(same); d != d0 {
		t.Errorf("an equal command line has another digest")
	}
	if _, d1 := StdioCommand(config.Server{Command: "srv"}); func() bool {
		_, d2 := StdioCommand(config.Server{Command: "srv", Args: []string{}, Env: map[string]string{}})
		return d1 != d2
	}() {
		t.Errorf("nil and empty args/env differ")
	}
	changes := map[string]func(*config.Server){
		"command": func(s *config.Server) { s.Command = "srv2" },
		"args":    func(s *config.Server) { s.Args = []string{"a", "b"} },
		"split":   func(s *config.Server) { s.Command, s.Args = "srv a", nil },
		"env":     func(s *config.Server) { s.Env = map[string]string{"K": "w"} },
		"env key": func(s *config.Server) { s.Env = map[string]string{"L": "v"} },
		"cwd":     func(s *config.Server) { s.Cwd = "/" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c := base
			c.Args = append([]string(nil), base.Args...)
			change(&c)
			if _, d := StdioCommand(c); d == d0 {
				t.Errorf("changing the %s kept the digest", name)
			}
		})
	}
}

// fakeApprovals approves the digests it was told to, and records what it was asked.
type fakeApprovals struct {
	mu       sync.Mutex
	approved map[string]bool
	asked    []string
	fail     error
}

func (f *fakeApprovals) check(_ context.Context, server, display, digest string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, server+"\x00"+display+"\x00"+digest)
	if f.fail != nil {
		return false, f.fail
	}
	return f.approved[digest], nil
}

func (f *fakeApprovals) approve(digest string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved[digest] = true
}

func (f *fakeApprovals) setFail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = err
}

func (f *fakeApprovals) askedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func TestUnapprovedStdioServerNeverStarts(t *testing.T) {
	srv := newStdioServer(t, echoTool)
	cfg := srv.config()
	display, digest := StdioCommand(cfg)
	approvals := &fakeApprovals{approved: map[string]bool{}}
	opts := fastOptions()
	opts.ApproveStdio = approvals.check
	rec := newFakeReconciler()
	m := startManager(t, map[string]config.Server{"local": cfg}, rec, opts)

	waitState(t, m, "local", StateAwaitingApproval, 5*time.Second)
	if st := status(m, "local"); st.LastError != "" {
		t.Errorf("LastError = %q, want none: waiting for the owner is not an error", st.LastError)
	}
	// Give a wrongly started process time to write its pid file.
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(srv.pid); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unapproved server ran (pid file: %v)", err)
	}
	if n := approvals.askedCount(); n != 1 {
		t.Errorf("ApproveStdio asked %d times while nothing woke the supervisor, want 1", n)
	}
	approvals.mu.Lock()
	if got, want := approvals.asked[0], "local\x00"+display+"\x00"+digest; got != want {
		t.Errorf("ApproveStdio got %q, want %q", got, want)
	}
	approvals.mu.Unlock()
	if _, err := m.CallTool(context.Background(), "local", "echo", nil); !errors.Is(err, ErrNotConnected) {
		t.Errorf("CallTool on an unapproved server: %v, want ErrNotConnected", err)
	}

	// A wake without an approval changes nothing.
	m.Wake("local")
	m.Wake("nobody")
	waitFor(t, 5*time.Second, "a second check", func() bool { return approvals.askedCount() >= 2 })
	if st := status(m, "local"); st.State != StateAwaitingApproval || srv.currentPid() != 0 {
		t.Fatalf("woken without approval: state %s, pid %d", st.State, srv.currentPid())
	}

	approvals.approve(digest)
	m.Wake("local")
	waitState(t, m, "local", StateConnected, 10*time.Second)
	waitNames(t, rec, "local", "echo")
	if !alive(srv.currentPid()) {
		t.Errorf("the approved server is not running")
	}
}

func TestApprovalCheckFailureBacksOff(t *testing.T) {
	srv := newStdioServer(t, echoTool)
	approvals := &fakeApprovals{approved: map[string]bool{}, fail: errors.New("database is gone")}
	opts := fastOptions()
	opts.ApproveStdio = approvals.check
	m := startManager(t, map[string]config.Server{"local": srv.config()}, newFakeReconciler(), opts)
	waitState(t, m, "local", StateBackoff, 5*time.Second)
	if st := status(m, "local"); !strings.Contains(st.LastError, "database is gone") {
		t.Errorf("LastError = %q", st.LastError)
	}
	if srv.currentPid() != 0 {
		t.Fatal("a server whose approval could not be checked ran")
	}
	_, digest := StdioCommand(srv.config())
	approvals.approve(digest)
	approvals.setFail(nil)
	// Retried on its own after the backoff: no wake needed.
	waitState(t, m, "local", StateConnected, 10*time.Second)
}

func TestApproveStdioIgnoresRemoteServers(t *testing.T) {
	approvals := &fakeApprovals{approved: map[string]bool{}}
	opts := fastOptions()
	opts.ApproveStdio = approvals.check
	m := startManager(t, map[string]config.Server{
		"remote": {Type: config.TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	}, newFakeReconciler(), opts)
	waitFor(t, 5*time.Second, "a dial", func() bool {
		st := status(m, "remote").State
		return st == StateBackoff || st == StateFailed
	})
	if n := approvals.askedCount(); n != 0 {
		t.Errorf("ApproveStdio was asked %d times about an http server", n)
	}
}
