package voice

import (
	"context"
	"sync"
	"time"

	"maven/app/activity"
)

// Every turn is an audit event, and writing one to SQLite costs as much as the rest of a turn
// (an insert into tool_events and its copy into the activity feed). The reply does not wait for
// it: one writer appends the events in the order the turns took them, right after. The queue
// is bounded and a full queue makes the next turn wait, so no event is ever dropped; Close
// writes what is queued before the database closes, so only a crash of the daemon can lose
// the last few milliseconds of events — as a crash during a run always could.

// auditQueue is how many events may wait for the writer; auditTimeout bounds one write.
const (
	auditQueue   = 256
	auditTimeout = 5 * time.Second
)

type auditEvent struct {
	toolID  int64 // 0: the turn involved no row
	outcome Outcome
	detail  map[string]any
	synced  chan struct{} // a marker of Sync, not an event
}

type auditor struct {
	s *Service

	mu     sync.RWMutex // held for reading to enqueue, for writing to close
	closed bool
	queue  chan auditEvent
	done   chan struct{}
}

func newAuditor(s *Service) *auditor {
	a := &auditor{s: s, queue: make(chan auditEvent, auditQueue), done: make(chan struct{})}
	go a.run()
	return a
}

// add queues an event; after Close it is written at once.
func (a *auditor) add(e auditEvent) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		a.write(e)
		return
	}
	a.queue <- e
}

func (a *auditor) run() {
	defer close(a.done)
	for e := range a.queue {
		a.write(e)
	}
}

func (a *auditor) write(e auditEvent) {
	if e.synced != nil {
		close(e.synced)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	if e.toolID != 0 {
		if err := a.s.d.Rows.Record(ctx, e.toolID, "voice", "voice_"+string(e.outcome), e.detail); err != nil {
			a.s.opts.Logger.Error("voice: audit event", "tool_id", e.toolID, "outcome", e.outcome, "err", err)
		}
		return
	}
	if a.s.d.Activity == nil {
		return
	}
	if err := a.s.d.Activity.Append(ctx, "voice", activity.ActionVoiceTurn, string(e.outcome), e.detail); err != nil {
		a.s.opts.Logger.Error("voice: activity event", "outcome", e.outcome, "err", err)
	}
}

// Sync waits until every turn taken so far is in the audit trail, or ctx is done.
func (s *Service) Sync(ctx context.Context) error {
	done := make(chan struct{})
	s.audit.add(auditEvent{synced: done})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes the queued audit events and stops the writer; turns taken after it write their
// events at once. Call it before the database closes.
func (s *Service) Close() {
	a := s.audit
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	close(a.queue)
	a.mu.Unlock()
	<-a.done
}
