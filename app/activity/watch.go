package activity

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// recordTimeout bounds one write from a hook or a watcher, which have no request context.
const recordTimeout = 5 * time.Second

// LockRecorder records locks and unlocks. The vault's hooks run more often than the state
// changes (a lock of a locked daemon, or of one without a vault; the unlock hooks also run
// after a secret is set), so the hooks report the lock state and only a change is recorded.
type LockRecorder struct {
	log    *Log
	logger *slog.Logger

	mu     sync.Mutex
	locked bool
}

// NewLockRecorder starts from the daemon's lock state at boot.
func (l *Log) NewLockRecorder(locked bool, logger *slog.Logger) *LockRecorder {
	return &LockRecorder{log: l, logger: logger, locked: locked}
}

// Set records the daemon's lock state, if it changed.
func (r *LockRecorder) Set(locked bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locked == locked {
		return
	}
	r.locked = locked
	action := ActionUnlocked
	if locked {
		action = ActionLocked
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := r.log.Append(ctx, Event{Actor: "owner", Action: action}); err != nil {
		r.logger.Error("activity: record "+action, "err", err)
	}
}

// ServerState is one MCP server's state as the feed records it.
type ServerState struct {
	Name string
	// State is the server's state as the feed records it (mcp.State.Recorded): a redial's
	// backoff reads as connecting, so a dead endpoint adds an entry when it goes down and when
	// it comes back, not one per retry.
	State     string
	LastError string
}

// WatchServers records servers' state changes until ctx is done: it reads snapshot after every
// receive on changes, and records each server whose state differs from the last it recorded.
// The changes of one snapshot are one write: a lock takes a hundred servers to locked at once,
// and a transaction for each kept the database's one writer, the next unlock's own record
// among those waiting for it, busy for as long.
func (l *Log) WatchServers(ctx context.Context, changes <-chan struct{}, snapshot func() []ServerState, logger *slog.Logger) {
	last := map[string]string{}
	for _, s := range snapshot() {
		last[s.Name] = s.State
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
		var events []Event
		for _, s := range snapshot() {
			now := s.State
			if was, ok := last[s.Name]; ok && was == now {
				continue
			}
			events = append(events, Event{Actor: "system", Action: ActionServerState,
				Detail: map[string]any{"server": s.Name, "from": last[s.Name], "to": now, "error": s.LastError}})
			last[s.Name] = now
		}
		if len(events) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, recordTimeout)
		err := l.Append(rctx, events...)
		cancel()
		if err != nil {
			logger.Error("activity: record servers' states", "servers", len(events), "err", err)
		}
	}
}
