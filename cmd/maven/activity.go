package main

import (
	"context"
	"log/slog"

	"maven/app/activity"
	"maven/app/mcp"
	"maven/app/vault"
)

// startActivity starts recording in the activity feed what no row's audit trail holds: locks
// and unlocks, and MCP servers' state changes (until ctx is done).
func startActivity(ctx context.Context, feed *activity.Log, gate *vault.Gate, manager *mcp.Manager, logger *slog.Logger) *activity.Log {
	locks := feed.NewLockRecorder(gate.Locked(), logger)
	gate.OnLock(func() { locks.Set(gate.Locked()) })
	gate.OnUnlock(func(func(string) ([]byte, bool)) { locks.Set(gate.Locked()) })
	go feed.WatchServers(ctx, manager.Changes(), func() []activity.ServerState {
		var out []activity.ServerState
		for _, s := range manager.Status() {
			out = append(out, activity.ServerState{Name: s.Name, State: string(s.State.Recorded()), LastError: s.LastError})
		}
		return out
	}, logger)
	return feed
}
