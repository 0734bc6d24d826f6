package handlers

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestSourceLimits(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimits[netip.Prefix](budget{every: 10 * time.Second, burst: 3}, 100, func() time.Time { return now })
	from := func(addr string) error {
		r := httptest.NewRequest("POST", "/login/begin", nil)
		r.RemoteAddr = addr
		return l.take(sourceOf(r))
	}
	for i := range 3 {
		if err := from("192.0.2.1:1000"); err != nil {
			t.Fatalf("request %d within the burst: %v", i, err)
		}
	}
	var limited rateLimited
	if err := from("192.0.2.1:2000"); !errors.As(err, &limited) || limited.wait != 10*time.Second {
		t.Fatalf("beyond the burst: %v, want a 10 s wait", err)
	}
	// Another address has its own bucket; one IPv6 host's /64 is one source.
	if err := from("192.0.2.2:1000"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	for i := range 3 {
		if err := from(fmt.Sprintf("[2001:db8:1:2::%x]:1", i+1)); err != nil {
			t.Fatalf("IPv6 request %d: %v", i, err)
		}
	}
	if err := from("[2001:db8:1:2:ffff::9]:1"); err == nil {
		t.Fatal("another address of the same /64 got a bucket of its own")
	}
	now = now.Add(10 * time.Second)
	if err := from("192.0.2.1:3000"); err != nil {
		t.Fatalf("after the refill: %v", err)
	}

	// The table never holds more than its size, however many sources come.
	for i := range 10_000 {
		_ = from(fmt.Sprintf("10.%d.%d.%d:1", i>>16, (i>>8)&0xff, i&0xff))
	}
	if n := l.len(); n != 100 {
		t.Fatalf("%d sources in a table of 100", n)
	}
}

// len is the number of keys in the table.
func (l *limits[K]) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recent.Len()
}
