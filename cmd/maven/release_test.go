package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"maven/app/allowlist"
	"maven/db"
	"maven/internal/testkit/testdb"
)

// TestMemoryGoesBackAfterABurstOfWrites: a burst of writes to the allowlist (a discovery) is
// followed, once the writes have paused, by a release of the memory they freed, and the next
// write by another; the loop ends with its context.
func TestMemoryGoesBackAfterABurstOfWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tools := allowlist.NewService(db.NewToolStore(testdb.Open(t)), time.Now)
	var releases atomic.Int64
	// The writes start once the loop holds its first channel: a burst before it would be missed
	// (CI saw the goroutine start after the four writes).
	subscribed := make(chan struct{})
	var once sync.Once
	signal := func() <-chan struct{} {
		ch := tools.Changed()
		once.Do(func() { close(subscribed) })
		return ch
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseAfterBursts(ctx, signal, 100*time.Millisecond, func() { releases.Add(1) })
	}()
	<-subscribed
	propose := func(name string) {
		t.Helper()
		if _, _, err := tools.ProposeTool(ctx, allowlist.Proposal{Name: name, Cmd: []string{"/bin/" + name},
			Scope: allowlist.ScopeLocal, Source: allowlist.SourceCLI, Actor: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		propose(name)
	}
	waitFor(t, 10*time.Second, func() bool { return releases.Load() >= 1 })
	after := releases.Load()
	propose("e")
	waitFor(t, 10*time.Second, func() bool { return releases.Load() > after })
	cancel()
	<-done
}
