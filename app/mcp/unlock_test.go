package mcp

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"maven/app/config"
	"maven/app/mcp/mcptest"
)

// secretServers configures one http server per black hole, each needing the secret tok.
func secretServers(holes *mcptest.BlackHoleSet) map[string]config.Server {
	servers := map[string]config.Server{}
	for i, addr := range holes.Addrs {
		servers[fmt.Sprintf("hole%02d", i)] = config.Server{Type: config.TransportHTTP, URL: "http://" + addr + "/mcp",
			Headers: map[string]string{"Authorization": "Bearer ${secret:tok}"}}
	}
	return servers
}

func allIn(m *Manager, want State) bool {
	for _, st := range m.Status() {
		if st.State != want {
			return false
		}
	}
	return true
}

// TestAnUnlockWakesEveryServerThatNeedsASecret checks that an unlock, which only arms a timer
// (docs/design.md#rule-13), still starts every server that waited for a secret: each dials its
// black hole soon after.
func TestAnUnlockWakesEveryServerThatNeedsASecret(t *testing.T) {
	holes := mcptest.NewBlackHoles(t, 30)
	opts := fastOptions()
	opts.DialTimeout = time.Minute
	// The daemon's transport, whose idle connections its lock release closes (cmd/maven): a dial
	// cut off by the lock after its connection was made leaves that connection idle in the pool,
	// with no request on it.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	opts.Transport = transport
	m := startManager(t, secretServers(holes), newFakeReconciler(), opts)
	waitFor(t, 10*time.Second, "every server to wait locked", func() bool { return allIn(m, StateLocked) })

	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "t0k", true }))
	waitFor(t, 20*time.Second, "every server to dial", func() bool {
		return allIn(m, StateConnecting) && holes.Open() >= len(holes.Addrs)
	})

	// And a lock ends every one of those dials at once.
	m.SetSecrets(nil)
	if !allIn(m, StateLocked) {
		t.Errorf("right after the lock: %+v", m.Status())
	}
	// Only an idle connection is closed so: a request still waiting for its black hole is not.
	waitFor(t, 20*time.Second, "the dials to close", func() bool {
		transport.CloseIdleConnections()
		return holes.Open() == 0
	})
}

// TestALockRightAfterAnUnlockLeavesEveryServerLocked checks that the wakes an unlock arranged
// for later find the vault locked again when they come, and dial nothing.
func TestALockRightAfterAnUnlockLeavesEveryServerLocked(t *testing.T) {
	holes := mcptest.NewBlackHoles(t, 20)
	m := startManager(t, secretServers(holes), newFakeReconciler(), fastOptions())
	waitFor(t, 10*time.Second, "every server to wait locked", func() bool { return allIn(m, StateLocked) })

	m.SetSecrets(bytesLookup(func(string) (string, bool) { return "t0k", true }))
	m.SetSecrets(nil)
	// Past the whole spread of the wakes, and then some: no server leaves locked, none dials.
	for deadline := time.Now().Add(dialSpreadDelay + dialSpreadJitter + 300*time.Millisecond); time.Now().Before(deadline); {
		if !allIn(m, StateLocked) || holes.Open() != 0 {
			t.Fatalf("after an unlock and a lock: %d connections open, %+v", holes.Open(), m.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTheUnlockHookDoesNothingPerServer checks that what an unlock's answer waits for of the
// manager does not grow with the servers: with a hundred that need a secret, SetSecrets makes
// as many allocations as with one, since finding and waking them is left to the timer.
func TestTheUnlockHookDoesNothingPerServer(t *testing.T) {
	lookup := func(string) ([]byte, bool) { return []byte("t0k"), true }
	allocs := func(n int) float64 {
		servers := map[string]config.Server{}
		for i := range n {
			name := fmt.Sprintf("s%03d", i)
			servers[name] = config.Server{Name: name, Type: config.TransportHTTP, URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", 40000+i),
				Headers: map[string]string{"Authorization": "Bearer ${secret:tok}"}}
		}
		m := NewManager(servers, newFakeReconciler(), fastOptions(), nil)
		return testing.AllocsPerRun(200, func() { m.SetSecrets(lookup) })
	}
	one, hundred := allocs(1), allocs(100)
	if hundred > one+1 {
		t.Fatalf("SetSecrets makes %.0f allocations with 100 servers, %.0f with one", hundred, one)
	}
}
