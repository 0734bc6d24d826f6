package voice

import (
	"context"
	"sync"
	"time"

	"maven/app/activity"
)

// Every turn is an audit event, an entry of the activity feed, and writing one to SQLite costs
// as much as the rest of a turn. The reply does not wait for it: one writer appends the events
// in the order the turns took them, shortly after, those of auditDelay together in one
// transaction (one commit instead of one each, and the write does not compete with the turn
// that is still answering). The queue is bounded and a full queue makes the next turn wait, so
// no event is ever dropped; each event keeps the time of its turn; Close writes what is queued
// before the database closes, so only a crash of the daemon can lose the last moment of events
// — as a crash during a run always could.

const (
	auditQueue   = 256                   // events that may wait for the writer
	auditDelay   = 10 * time.Millisecond // how long the writer gathers events before writing
	auditTimeout = 5 * time.Second       // bounds one write
)

type auditEvent struct {
	event  activity.Event
	synced chan struct{} // a marker of Sync, not an event
}

type auditor struct {
	s     *Service
	flush chan struct{} // asks the writer not to wait out auditDelay

	mu     sync.RWMutex // held for reading to enqueue, for writing to close
	closed bool
	queue  chan auditEvent
	done   chan struct{}
}

func newAuditor(s *Service) *auditor {
	a := &auditor{s: s, flush: make(chan struct{}, 1), queue: make(chan auditEvent, auditQueue), done: make(chan struct{})}
	go a.run()
	return a
}

// add queues an event; after Close it is written at once.
func (a *auditor) add(e auditEvent) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.write([]auditEvent{e})
		return
	}
	a.queue <- e
}

func (a *auditor) run() {
	defer close(a.done)
	for {
		first, ok := <-a.queue
		if !ok {
			return
		}
		if first.synced == nil {
			t := time.NewTimer(auditDelay)
			select {
			case <-t.C:
			case <-a.flush:
			}
			t.Stop()
		}
		batch := []auditEvent{first}
		for more := true; more; {
			select {
			case e, ok := <-a.queue:
				if ok {
					batch = append(batch, e)
				} else {
					more = false
				}
			default:
				more = false
			}
		}
		a.write(batch)
	}
}

// write appends a batch's events, then releases its Sync markers.
func (a *auditor) write(batch []auditEvent) {
	events := make([]activity.Event, 0, len(batch))
	for _, e := range batch {
		if e.synced == nil {
			events = append(events, e.event)
		}
	}
	if len(events) > 0 && a.s.d.Activity != nil {
		ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
		if err := a.s.d.Activity.Append(ctx, events...); err != nil {
			a.s.opts.Logger.Error("voice: audit events", "events", len(events), "err", err)
		}
		cancel()
	}
	for _, e := range batch {
		if e.synced != nil {
			close(e.synced)
		}
	}
}

// hurry tells the writer to write what it has without waiting out auditDelay.
func (a *auditor) hurry() {
	select {
	case a.flush <- struct{}{}:
	default:
	}
}

// Close stops the calls waiting for the owner's answer, writes the queued audit events and
// stops the writer; turns taken after it write their events at once. Call it before the
// database closes.
func (s *Service) Close() {
	s.convs.clear() // stops the calls waiting for an answer
	a := s.audit
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	a.hurry()
	<-a.done
}
