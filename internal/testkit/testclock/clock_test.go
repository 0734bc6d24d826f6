package testclock_test

import (
	"testing"
	"time"

	"maven/internal/testkit/testclock"
)

// TestClock: a clock reads what it was set to until moved; a ticking one is a step later at
// each reading, and moves by hand too.
func TestClock(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := testclock.New(start)
	if a, b := c.Now(), c.Now(); !a.Equal(start) || !b.Equal(start) {
		t.Fatalf("read %s then %s, want %s twice", a, b, start)
	}
	c.Advance(time.Hour)
	if got := c.Now(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("after Advance: %s", got)
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set: %s", got)
	}

	tick := testclock.Ticking(start, time.Millisecond)
	if a, b := tick.Now(), tick.Now(); !a.Equal(start.Add(time.Millisecond)) || !b.Equal(start.Add(2*time.Millisecond)) {
		t.Fatalf("ticking read %s then %s", a, b)
	}
	tick.Advance(time.Minute)
	if got := tick.Now(); !got.Equal(start.Add(time.Minute + 3*time.Millisecond)) {
		t.Fatalf("ticking after Advance: %s", got)
	}
}
