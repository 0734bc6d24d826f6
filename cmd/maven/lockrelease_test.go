package main

import (
	"sync"
	"testing"
	"time"
)

// fakeTimers holds the callbacks a lockRelease scheduled, for the test to fire.
type fakeTimers struct {
	mu      sync.Mutex
	pending []*fakeTimer
}

type fakeTimer struct {
	after   time.Duration
	f       func()
	stopped bool
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{after: d, f: f}
	ft.pending = append(ft.pending, t)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// fireAll fires every timer not stopped, until none is left, and returns the waits they had.
func (ft *fakeTimers) fireAll() []time.Duration {
	var waits []time.Duration
	for {
		ft.mu.Lock()
		var next *fakeTimer
		for len(ft.pending) > 0 && next == nil {
			t := ft.pending[0]
			ft.pending = ft.pending[1:]
			if !t.stopped {
				next = t
			}
		}
		ft.mu.Unlock()
		if next == nil {
			return waits
		}
		waits = append(waits, next.after)
		next.f()
	}
}

// TestLockReleaseStartsOverOnEveryLock checks that locks in quick succession run one schedule
// of release passes, the last lock's, and not one each: each pass is a full collection.
func TestLockReleaseStartsOverOnEveryLock(t *testing.T) {
	timers := &fakeTimers{}
	passes := 0
	r := &lockRelease{pass: func() { passes++ }, after: timers.after, steps: releaseSteps}
	for range 5 {
		r.start()
	}
	waits := timers.fireAll()
	if passes != len(releaseSteps) {
		t.Fatalf("%d passes after 5 locks, want %d (one schedule)", passes, len(releaseSteps))
	}
	var at time.Duration
	for i, w := range waits {
		at += w
		if at != releaseSteps[i] {
			t.Fatalf("pass %d ran %s after the lock, want %s", i, at, releaseSteps[i])
		}
	}
	// A lock after the passes ended runs them all again.
	r.start()
	timers.fireAll()
	if passes != 2*len(releaseSteps) {
		t.Fatalf("%d passes after a sixth lock, want %d", passes, 2*len(releaseSteps))
	}
}

// TestLockReleaseLockDuringThePasses checks that a lock between two passes starts the schedule
// over from the first pass.
func TestLockReleaseLockDuringThePasses(t *testing.T) {
	timers := &fakeTimers{}
	passes := 0
	r := &lockRelease{pass: func() { passes++ }, after: timers.after, steps: releaseSteps}
	r.start()
	// Fire the first two passes only.
	for range 2 {
		timers.mu.Lock()
		next := timers.pending[0]
		timers.pending = timers.pending[1:]
		timers.mu.Unlock()
		next.f()
	}
	r.start()
	timers.fireAll()
	if want := 2 + len(releaseSteps); passes != want {
		t.Fatalf("%d passes, want %d: two, then a whole schedule", passes, want)
	}
}
