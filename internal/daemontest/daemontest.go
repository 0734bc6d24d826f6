// Package daemontest holds what tests that run the real maven binary share: a log buffer for
// its stderr, and approving stdio command lines the way the owner would, before it starts.
package daemontest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"maven/app/approval"
	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/config"
	"maven/app/mcp"
	"maven/db"
)

// Log keeps a daemon's log, for failure messages and for what a test waits to see in it; it
// is safe to write and read at once. The zero Log is empty and ready.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
	// changed is closed by the next write, for Wait; nil while nobody waits.
	changed chan struct{}
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

// Wait waits up to within for re to match the log, and returns its last match: the first
// group's text, or the whole match if re has no group. False if nothing matched in time.
func (l *Log) Wait(re *regexp.Regexp, within time.Duration) (string, bool) {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if all := re.FindAllSubmatch(l.b.Bytes(), -1); len(all) > 0 {
			last := all[len(all)-1]
			l.mu.Unlock()
			return string(last[len(last)-1]), true
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return "", false
		}
	}
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ApproveCommandLines approves, in the database of data, the command line of every stdio server of
// the config at cfgPath, as the owner's passkey step-up on /tools would (docs/design.md#rule-25); a
// daemon started afterwards starts them. Run it while no daemon uses data.
func ApproveCommandLines(tb testing.TB, data, cfgPath string) {
	tb.Helper()
	cfg, err := config.Load(cfgPath, os.Getenv)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := os.MkdirAll(data, 0o700); err != nil {
		tb.Fatal(err)
	}
	bdb, err := db.Open(ctx, filepath.Join(data, "maven.db"))
	if err != nil {
		tb.Fatal(err)
	}
	defer bdb.Close()
	svc := approval.NewService(db.NewApprovalStore(bdb), time.Now)
	for name, s := range cfg.MCPServers {
		if s.Type != config.TransportStdio {
			continue
		}
		display, digest := mcp.StdioCommand(s)
		ok, err := svc.Check(ctx, name, display, digest)
		if err != nil {
			tb.Fatal(err)
		}
		if ok {
			continue
		}
		pending, err := svc.Pending(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		for _, p := range pending {
			if p.Server != name {
				continue
			}
			if _, err := svc.Approve(ctx, p.ID, authtest.Proof(tb, auth.One(auth.ActionAddServer, p.ID, ""))); err != nil {
				tb.Fatal(err)
			}
		}
		if ok, err := svc.Check(ctx, name, display, digest); err != nil || !ok {
			tb.Fatalf("command line of %s not approved: %v", name, err)
		}
	}
}
