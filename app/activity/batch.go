package activity

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Appender appends events in one write; *Log is one.
type Appender interface {
	Append(ctx context.Context, events ...Event) error
}

// Batcher appends events to an Appender off its callers' path: writing an entry to SQLite costs
// as much as a voice turn or an agent's call to a fast tool, and the answer need not wait for
// it. One writer appends the events in the order they came, those of batchGather together in
// one write (one commit instead of one each, and the write does not compete with the answer
// that is still being sent), so that an entry is on /activity a moment after its turn or call
// was answered. The queue is bounded and a full queue makes the next caller wait, so no event
// is ever dropped; each event keeps the time its caller gave it; Close writes what is queued,
// so only a crash of the daemon loses the last moment of events, as a crash during a run
// always could.
type Batcher struct {
	to     Appender
	logger *slog.Logger

	mu      sync.RWMutex // held for reading to enqueue, for writing to close
	closed  bool
	queue   chan Event
	closing chan struct{} // closed by Close: the writer stops gathering
	done    chan struct{}
}

const (
	batchQueue   = 256                   // events that may wait for the writer
	batchGather  = 10 * time.Millisecond // how long the writer gathers events before a write
	batchTimeout = 5 * time.Second       // bounds one write
)

// NewBatcher starts the writer of events to to; failed writes are logged to logger.
func NewBatcher(to Appender, logger *slog.Logger) *Batcher {
	b := &Batcher{to: to, logger: logger, queue: make(chan Event, batchQueue), closing: make(chan struct{}),
		done: make(chan struct{})}
	go b.run()
	return b
}

// Append queues events, in order, and returns once they are queued; after Close it writes them
// at once. Events without a time take the time they are written.
func (b *Batcher) Append(ctx context.Context, events ...Event) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		b.write(events)
		return nil
	}
	for _, e := range events {
		b.queue <- e
	}
	return nil
}

func (b *Batcher) run() {
	defer close(b.done)
	for {
		first, ok := <-b.queue
		if !ok {
			return
		}
		gather := time.NewTimer(batchGather)
		select {
		case <-gather.C:
		case <-b.closing:
		}
		gather.Stop()
		batch := []Event{first}
		for more := true; more; {
			select {
			case e, ok := <-b.queue:
				if ok {
					batch = append(batch, e)
				} else {
					more = false
				}
			default:
				more = false
			}
		}
		b.write(batch)
	}
}

func (b *Batcher) write(events []Event) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	if err := b.to.Append(ctx, events...); err != nil {
		b.logger.Error("activity: write queued events", "events", len(events), "err", err)
	}
}

// Close writes the queued events and stops the writer; events appended after it are written at
// once. Call it before the database closes.
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.queue)
	close(b.closing)
	b.mu.Unlock()
	<-b.done
}
