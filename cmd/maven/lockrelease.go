package main

import (
	"net/http"
	"runtime/debug"
	"sync"
	"time"
)

// releaseSteps are when, after a lock, its release passes run: over the seconds the sessions
// that used secrets take to close (on their own goroutines; a graceful close waits a few seconds
// at most).
var releaseSteps = []time.Duration{time.Second, 3 * time.Second, 6 * time.Second, 10 * time.Second, 15 * time.Second, 25 * time.Second}

// lockRelease collects what a lock freed. The idle connections of credentials
// (credentialTransport) keep their last request and response, Authorization header and tokens,
// in their buffers, so each pass closes them. Each pass first collects what the ones before
// closed, so that clobberfree (see clobberFreed) overwrites it and whole pages go back to the
// kernel. It never blocks the lock.
//
// A lock while the passes of the last one still run starts them over from the first: each pass
// is a full collection, and a schedule of six per lock, added up, had a daemon locked every few
// seconds collecting several times a second, each collection the longer the more servers it
// holds.
type lockRelease struct {
	pass  func()                                  // one pass
	after func(time.Duration, func()) func() bool // time.AfterFunc; returns the timer's Stop
	steps []time.Duration

	mu   sync.Mutex
	gen  int         // bumped by every start: a pass of an earlier schedule schedules no more
	stop func() bool // stops the pending pass; nil if none
}

func newLockRelease(credentials *http.Transport) *lockRelease {
	return &lockRelease{
		pass: func() {
			debug.FreeOSMemory()
			credentials.CloseIdleConnections()
		},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop },
		steps: releaseSteps,
	}
}

// start (re)starts the passes after a lock.
func (r *lockRelease) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		r.stop()
	}
	r.gen++
	r.schedule(r.gen, 0)
}

// schedule arranges pass i of schedule gen; r.mu is held.
func (r *lockRelease) schedule(gen, i int) {
	wait := r.steps[i]
	if i > 0 {
		wait -= r.steps[i-1]
	}
	r.stop = r.after(wait, func() {
		r.pass()
		r.mu.Lock()
		defer r.mu.Unlock()
		if gen != r.gen {
			return // a later lock started the passes over
		}
		r.stop = nil
		if i+1 < len(r.steps) {
			r.schedule(gen, i+1)
		}
	})
}
