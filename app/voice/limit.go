package voice

import (
	"sync"
	"time"
)

// The turn rate: a person speaks a few turns a minute; a leaked token must not be able to
// hammer tools. Options.TurnsPerSecond and Options.Burst (the config's voice block) change it.
const (
	DefaultTurnsPerSecond = 5
	DefaultBurst          = 30
)

// limiter is a token bucket: burst turns at once, refilled at perSecond.
type limiter struct {
	mu        sync.Mutex
	tokens    float64
	burst     float64
	perSecond float64
	last      time.Time
	now       func() time.Time
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	return &limiter{tokens: float64(burst), burst: float64(burst), perSecond: perSecond, last: now(), now: now}
}

func (l *limiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.perSecond)
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
