package handlers

import (
	"sync"
	"time"
)

// rateLimiter is a token bucket: burst requests at once, refilled at perSecond.
type rateLimiter struct {
	mu        sync.Mutex
	tokens    float64
	burst     float64
	perSecond float64
	last      time.Time
	now       func() time.Time
}

func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	return &rateLimiter{tokens: float64(burst), burst: float64(burst), perSecond: perSecond, last: now(), now: now}
}

func (l *rateLimiter) allow() bool {
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
