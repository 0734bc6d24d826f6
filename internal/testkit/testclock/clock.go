// Package testclock is the fake clock of Maven's tests: it reads the time a test set, and moves
// only when the test moves it (or, ticking, by a step at each reading).
package testclock

import (
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use: services read it from their own
// goroutines while the test moves it. Pass its Now where a service takes a clock.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

// New returns a Clock that reads t until it is moved.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Ticking returns a Clock that starts at t and reads step later at each reading, as a real
// clock would, so that no two readings are equal.
func Ticking(t time.Time, step time.Duration) *Clock { return &Clock{t: t, step: step} }

// Now returns the clock's time (and, ticking, moves it on by its step first).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
