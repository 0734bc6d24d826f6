package vault

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrTooManyAttempts is matched (errors.Is) by every *TooManyAttemptsError.
var ErrTooManyAttempts = errors.New("too many failed attempts")

// TooManyAttemptsError says an attempt was refused without being tried, and when the next
// one will be.
type TooManyAttemptsError struct {
	RetryAfter time.Duration
}

// Error says how long to wait, in whole seconds rounded up.
func (e *TooManyAttemptsError) Error() string {
	secs := (e.RetryAfter + time.Second - 1) / time.Second
	return fmt.Sprintf("%v; try again in %ds", ErrTooManyAttempts, secs)
}

// Is makes errors.Is(err, ErrTooManyAttempts) true.
func (e *TooManyAttemptsError) Is(target error) bool { return target == ErrTooManyAttempts }

// Backoff defaults: the first few mistakes are free (a typo is not an attack), then each
// failure doubles the wait, up to a ceiling that still lets the owner in within minutes.
const (
	DefaultFreeAttempts = 3
	DefaultBaseDelay    = time.Second
	DefaultMaxDelay     = 5 * time.Minute
)

// Limiter applies exponential backoff to consecutive failures, in memory. It is safe for
// concurrent use; a restart forgets it, which costs an attacker a restart per few guesses.
type Limiter struct {
	now       func() time.Time
	free      int
	base, max time.Duration
	mu        sync.Mutex
	failures  int
	notBefore time.Time
}

// NewLimiter returns a limiter with the default backoff, reading time from now.
func NewLimiter(now func() time.Time) *Limiter {
	return &Limiter{now: now, free: DefaultFreeAttempts, base: DefaultBaseDelay, max: DefaultMaxDelay}
}

// Check returns a *TooManyAttemptsError if an attempt now must wait, nil if it may go ahead.
func (l *Limiter) Check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if wait := l.notBefore.Sub(l.now()); wait > 0 {
		return &TooManyAttemptsError{RetryAfter: wait}
	}
	return nil
}

// Fail records a failed attempt, extending the wait before the next one. A nil Limiter records
// nothing.
func (l *Limiter) Fail() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures++
	l.notBefore = l.now().Add(l.delay(l.failures))
}

// Succeed forgets earlier failures. A nil Limiter records nothing.
func (l *Limiter) Succeed() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = 0
	l.notBefore = time.Time{}
}

// delay is the wait after n consecutive failures: none for the free ones, then base, 2·base,
// 4·base … up to max.
func (l *Limiter) delay(n int) time.Duration {
	if n <= l.free {
		return 0
	}
	d := l.base
	for i := l.free + 1; i < n && d < l.max; i++ {
		d *= 2
	}
	return min(d, l.max)
}
