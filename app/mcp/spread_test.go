package mcp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"maven/app/config"
)

// TestRunSpreadsTheFirstDials checks that Run dials no server at once (docs/design.md#rule-13):
// each supervisor's first dial comes at least dialSpreadDelay later, so that the daemon's first
// answers do not wait behind a hundred dials. The servers are one listener that notes when each
// connection arrives and closes it.
func TestRunSpreadsTheFirstDials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var (
		mu    sync.Mutex
		first time.Time
		n     int
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if n == 0 {
				first = time.Now()
			}
			n++
			mu.Unlock()
			c.Close()
		}
	}()
	servers := map[string]config.Server{}
	for i := range 5 {
		name := fmt.Sprintf("s%d", i)
		servers[name] = config.Server{Type: config.TransportHTTP, URL: "http://" + ln.Addr().String() + "/mcp"}
	}
	m := NewManager(servers, newFakeReconciler(), fastOptions(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := time.Now()
	m.Run(ctx)
	defer m.Close()
	waitFor(t, 30*time.Second, "every server to be dialled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n >= len(servers)
	})
	mu.Lock()
	defer mu.Unlock()
	if after := first.Sub(started); after < dialSpreadDelay {
		t.Fatalf("the first dial came %s after Run; want at least %s", after, dialSpreadDelay)
	}
}
