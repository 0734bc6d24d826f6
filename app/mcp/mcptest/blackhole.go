package mcptest

import (
	"net"
	"sync"
	"testing"
)

// BlackHoles starts n TCP listeners on loopback that accept connections and never answer: the
// endpoint a dial must not wait for. They, and the connections they took, close when the test
// ends.
func BlackHoles(tb testing.TB, n int) []string {
	tb.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		addrs []string
	)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		addrs = append(addrs, ln.Addr().String())
	}
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return addrs
}
