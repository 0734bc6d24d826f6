package runner

import (
	"context"
	"errors"
	"sync"
	"time"
)

// WithTimeout is context.WithTimeout for a run whose clock stops while a person is asked
// something (Pause): an MCP server may ask the owner a question during a call, and the wait for
// the answer is bounded on its own (by the voice turn), not by the call's timeout. When the
// time runs out ctx is cancelled with the cause context.DeadlineExceeded; TimedOut tells.
func WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	c := &clock{left: d, started: time.Now()}
	c.outer, _ = parent.Value(clockKey{}).(*clock)
	c.timer = time.AfterFunc(d, func() {
		c.end()
		cancel(context.DeadlineExceeded)
	})
	return context.WithValue(ctx, clockKey{}, c), func() {
		c.end()
		c.timer.Stop()
		cancel(context.Canceled)
	}
}

// Pause stops the clock of every WithTimeout that ctx is under, until resume is called (once;
// later calls do nothing). Pauses nest: a clock runs again when its last pause is resumed.
func Pause(ctx context.Context) (resume func()) {
	var paused []*clock
	for c, _ := ctx.Value(clockKey{}).(*clock); c != nil; c = c.outer {
		c.pause()
		paused = append(paused, c)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, c := range paused {
				c.resume()
			}
		})
	}
}

// TimedOut reports whether ctx ended because a timeout ran out (WithTimeout's, or a deadline of
// the standard library's), rather than being cancelled.
func TimedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

type clockKey struct{}

// clock is the time left of one WithTimeout.
type clock struct {
	outer *clock // the WithTimeout this one is under, if any
	timer *time.Timer

	mu      sync.Mutex
	left    time.Duration // while paused; otherwise as of started
	started time.Time
	pauses  int
	over    bool // the time ran out, or the run ended: the timer is never started again
}

func (c *clock) end() {
	c.mu.Lock()
	c.over = true
	c.mu.Unlock()
}

func (c *clock) pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pauses++
	if c.pauses == 1 && !c.over && c.timer.Stop() {
		c.left -= time.Since(c.started)
	}
}

func (c *clock) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pauses--
	if c.pauses == 0 && !c.over {
		c.started = time.Now()
		c.timer.Reset(max(c.left, 0))
	}
}
