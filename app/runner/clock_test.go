package runner

import (
	"context"
	"testing"
	"time"
)

func TestWithTimeoutRunsOut(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the timeout never ran out")
	}
	if !TimedOut(ctx) {
		t.Errorf("TimedOut = false after the time ran out (cause %v)", context.Cause(ctx))
	}
	// What is derived from it times out with it.
	child, stop := context.WithCancel(ctx)
	defer stop()
	if !TimedOut(child) {
		t.Error("a context derived from a timed-out one does not say it timed out")
	}
}

func TestWithTimeoutCancelledIsNotTimedOut(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), time.Hour)
	cancel()
	if ctx.Err() == nil || TimedOut(ctx) {
		t.Errorf("after cancel: Err %v, TimedOut %v; want cancelled, not timed out", ctx.Err(), TimedOut(ctx))
	}
	if TimedOut(context.Background()) {
		t.Error("a live context says it timed out")
	}
}

// A pause stops every clock the context is under, the outer ones included, and the time spent
// paused is not counted.
func TestPauseStopsEveryClockAround(t *testing.T) {
	outer, cancelOuter := WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancelOuter()
	inner, cancelInner := WithTimeout(outer, 150*time.Millisecond)
	defer cancelInner()

	resume := Pause(inner)
	// Paused four times as long as either timeout; poll that nothing ends meanwhile.
	for end := time.Now().Add(600 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if inner.Err() != nil || outer.Err() != nil {
			t.Fatalf("a paused clock ran out: inner %v, outer %v", inner.Err(), outer.Err())
		}
	}
	start := time.Now()
	resume()
	resume() // a second resume changes nothing
	select {
	case <-inner.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the clock never ran out after the pause")
	}
	if !TimedOut(inner) {
		t.Errorf("inner ended with %v, want a timeout", context.Cause(inner))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the clock ran out %s after the pause ended, want about 150ms", d)
	}
}

// Pauses nest: the clock starts again only when the last one ends.
func TestPausesNest(t *testing.T) {
	ctx, cancel := WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	first, second := Pause(ctx), Pause(ctx)
	first()
	for end := time.Now().Add(250 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if ctx.Err() != nil {
			t.Fatal("the clock ran while a pause was still held")
		}
	}
	second()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the clock never ran out after the last pause ended")
	}
}
