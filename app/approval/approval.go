// Package approval keeps the owner's approvals of stdio MCP servers' command lines
// (docs/design.md#rule-21 and docs/design.md#rule-25): a command line the owner has not approved,
// behind a step-up, never starts. Any change of command, arguments, environment or working
// directory is a new command line.
package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"maven/app/auth"
)

// ErrNotFound means no command line has that id.
var ErrNotFound = errors.New("command line not found")

// Command is one command line a stdio server was configured with, as the owner is shown it.
type Command struct {
	ID         int64
	Server     string
	Display    string // the exact command line, environment and working directory
	Digest     string // "sha256:" + hex, see mcp.StdioCommand
	SeenAt     time.Time
	ApprovedAt time.Time // zero while pending
	ApprovedBy string
}

// PendingCommand is a command line that waits for the owner's approval.
type PendingCommand struct {
	ID      int64
	Server  string
	Display string
	SeenAt  time.Time
	// Approved is the server's command line the owner approved last, as shown then; "" for a
	// server never approved. The page shows what changed against it (docs/design.md#rule-25).
	Approved string
}

// Store keeps the command lines.
type Store interface {
	// SeenCommand records server's command line digest, with display, the first time it is
	// seen, and forgets the server's older command lines that were never approved (they can no
	// longer start). It reports whether digest is approved.
	SeenCommand(ctx context.Context, server, digest, display string, at time.Time) (bool, error)
	// PendingCommands returns the command lines not yet approved, oldest first, each with its
	// server's last approved command line.
	PendingCommands(ctx context.Context) ([]PendingCommand, error)
	// Command returns ErrNotFound if no command line has that id.
	Command(ctx context.Context, id int64) (Command, error)
	// ApproveCommand marks the command line approved (once: a second approval keeps the first)
	// and returns it; ErrNotFound if no command line has that id.
	ApproveCommand(ctx context.Context, id int64, at time.Time, by string) (Command, error)
}

// Service checks and approves stdio servers' command lines. It is safe for concurrent use if
// its Store is.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service over store; now is time.Now when nil.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Check reports whether server's command line (digest, shown as display) is approved,
// recording it as pending the first time it is seen. It is mcp.ManagerOptions.ApproveStdio.
func (s *Service) Check(ctx context.Context, server, display, digest string) (bool, error) {
	ok, err := s.store.SeenCommand(ctx, server, digest, display, s.now())
	if err != nil {
		return false, fmt.Errorf("check command line of %s: %w", server, err)
	}
	return ok, nil
}

// Pending returns the command lines that wait for approval, oldest first.
func (s *Service) Pending(ctx context.Context) ([]PendingCommand, error) {
	p, err := s.store.PendingCommands(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pending command lines: %w", err)
	}
	return p, nil
}

// Command returns the command line with that id; ErrNotFound if there is none.
func (s *Service) Command(ctx context.Context, id int64) (Command, error) {
	c, err := s.store.Command(ctx, id)
	if err != nil {
		return Command{}, fmt.Errorf("command line %d: %w", id, err)
	}
	return c, nil
}

// Approve approves the command line id and returns its server's name, for the caller to wake
// it. proof must be a step-up for auth.ActionAddServer on id: without one it fails with
// auth.ErrStepUpRequired and approves nothing. ErrNotFound if no command line has that id.
func (s *Service) Approve(ctx context.Context, id int64, proof auth.StepUp) (string, error) {
	if !proof.Approves(auth.ActionAddServer, auth.Item{Target: id}) {
		return "", fmt.Errorf("approve command line %d: %w", id, auth.ErrStepUpRequired)
	}
	c, err := s.store.ApproveCommand(ctx, id, s.now(), proof.Owner())
	if err != nil {
		return "", fmt.Errorf("approve command line %d: %w", id, err)
	}
	return c.Server, nil
}
