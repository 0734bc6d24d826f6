package mcp

import (
	"testing"
	"time"
)

func TestBackoffGrowsWithFullJitterWithinBounds(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: 2 * time.Second}
	ceilings := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000, 2000}
	for i, c := range ceilings {
		ceil := c * time.Millisecond
		for range 50 {
			// Draw repeatedly at the same step: copy, so the step does not advance.
			bb := b
			d := bb.next()
			if d < b.min || d > ceil {
				t.Fatalf("step %d: delay %s outside [%s, %s]", i, d, b.min, ceil)
			}
		}
		b.next()
	}
	b.reset()
	for range 50 {
		bb := b
		if d := bb.next(); d != b.min {
			t.Fatalf("after reset the first delay is %s, want %s", d, b.min)
		}
	}
}

func TestBackoffNeverOverflows(t *testing.T) {
	b := backoff{min: time.Hour, max: 1000 * time.Hour}
	for range 200 {
		if d := b.next(); d < b.min || d > b.max {
			t.Fatalf("delay %s outside [%s, %s]", d, b.min, b.max)
		}
	}
}
