package mcp

import (
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing delays with full jitter: each is drawn uniformly
// between min and a ceiling that doubles from min up to max.
type backoff struct {
	min, max time.Duration
	n        int
}

func (b *backoff) next() time.Duration {
	ceil := b.max
	if b.n < 32 {
		if c := b.min << b.n; c > 0 && c < b.max {
			ceil = c
			b.n++
		}
	}
	if ceil <= b.min {
		return b.min
	}
	return b.min + rand.N(ceil-b.min+1)
}

func (b *backoff) reset() { b.n = 0 }
