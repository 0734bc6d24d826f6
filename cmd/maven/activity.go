package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/uptrace/bun"

	"maven/app/activity"
	"maven/app/mcp"
	"maven/app/vault"
	"maven/db"
)

// startActivity opens the activity feed and starts recording what no row's audit trail holds:
// locks and unlocks, and MCP servers' state changes (until ctx is done).
func startActivity(ctx context.Context, bdb *bun.DB, gate *vault.Gate, manager *mcp.Manager, logger *slog.Logger) *activity.Log {
	feed := activity.New(db.NewActivityStore(bdb), time.Now)
	locks := feed.NewLockRecorder(gate.Locked(), logger)
	gate.OnLock(func() { locks.Set(gate.Locked()) })
	gate.OnUnlock(func(func(string) ([]byte, bool)) { locks.Set(gate.Locked()) })
	go feed.WatchServers(ctx, manager.Changes(), func() []activity.ServerState {
		var out []activity.ServerState
		for _, s := range manager.Status() {
			out = append(out, activity.ServerState{Name: s.Name, State: string(s.State), LastError: s.LastError})
		}
		return out
	}, logger)
	return feed
}
