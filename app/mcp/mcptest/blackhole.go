package mcptest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// BlackHoles starts n TCP listeners on loopback that accept connections and never answer: the
// endpoint a dial must not wait for. They, and the connections they took, close when the test
// ends.
func BlackHoles(tb testing.TB, n int) []string {
	return NewBlackHoles(tb, n).Addrs
}

// BlackHoleSet is n black holes, which also count the connections open to them: one that
// reads what a client sends, and never answers, until the client closes it.
type BlackHoleSet struct {
	Addrs []string
	open  atomic.Int64
}

// NewBlackHoles starts n black holes (see BlackHoles).
func NewBlackHoles(tb testing.TB, n int) *BlackHoleSet {
	tb.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		set   = &BlackHoleSet{}
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
				set.open.Add(1)
				go func() {
					_, _ = io.Copy(io.Discard, c) // until the client closes it
					set.open.Add(-1)
				}()
			}
		}()
		set.Addrs = append(set.Addrs, ln.Addr().String())
	}
	tb.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return set
}

// Open is how many connections to the black holes their clients have not closed.
func (s *BlackHoleSet) Open() int { return int(s.open.Load()) }
