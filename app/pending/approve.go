package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"maven/app/allowlist"
	"maven/app/auth"
	"maven/app/reveal"
	"maven/app/runner"
)

// Approve runs the call the owner approved (docs/design.md#rule-31). proof must be a step-up
// for auth.ActionApproveCall on this call naming its Binding as it is now, else
// auth.ErrStepUpRequired: a step-up shown another call, or this one before it changed, runs
// nothing. The call must still be pending and unexpired (else a *NotPendingError), the daemon
// unlocked (ErrLocked), and its row still enabled with the same fingerprint and command (else
// the call is voided, and a *NotPendingError says so). Then one transition, pending → running,
// decides which approval runs it: a second approval, racing or later, finds it running or ran.
// The run goes through the one run path and is not cancelled by ctx: the owner's browser going
// away does not stop it. It returns the call as it is after the run.
func (s *Service) Approve(ctx context.Context, id int64, proof auth.StepUp) (Call, error) {
	c, err := s.d.Store.Get(ctx, id)
	if err != nil {
		return Call{}, err
	}
	if !proof.Approves(auth.ActionApproveCall, auth.Item{Target: id, Digest: Binding(c)}) {
		return c, fmt.Errorf("approve pending call %d: %w", id, auth.ErrStepUpRequired)
	}
	now := s.opts.Now()
	switch {
	case c.State == StatePending && !now.Before(c.Expires):
		c = s.expire(ctx, c)
		return c, &NotPendingError{Call: c}
	case c.State != StatePending:
		return c, &NotPendingError{Call: c}
	case s.d.Lock.Locked():
		return c, ErrLocked
	}
	row, err := s.d.Rows.Get(ctx, c.ToolID)
	if why := unlike(c, row, err); why != "" {
		c, err = s.void(ctx, c, why)
		if err != nil {
			return c, err
		}
		return c, &NotPendingError{Call: c}
	}
	if err != nil {
		return c, fmt.Errorf("pending call %d: read its row: %w", id, err)
	}
	c, err = s.transition(ctx, c, []State{StatePending}, Change{State: StateRunning, DecidedBy: proof.Owner(), DecidedAt: now, OpenAt: now},
		EventApproved, nil)
	if err != nil {
		return c, err
	}
	return s.run(context.WithoutCancel(ctx), c, row), nil
}

// Deny denies a pending call: nothing runs. It needs no step-up, since it only refuses; a call
// no longer pending is a *NotPendingError.
func (s *Service) Deny(ctx context.Context, id int64, by string) (Call, error) {
	c, err := s.d.Store.Get(ctx, id)
	if err != nil {
		return Call{}, err
	}
	now := s.opts.Now()
	if c.State == StatePending && !now.Before(c.Expires) {
		c = s.expire(ctx, c)
		return c, &NotPendingError{Call: c}
	}
	return s.transition(ctx, c, []State{StatePending}, Change{State: StateDenied, DecidedBy: by, DecidedAt: now, Finished: now,
		Reason: "the owner denied it"}, EventDenied, nil)
}

// running is the state a run leaves.
var running = []State{StateRunning}

// run runs c, which this approval moved to running, and keeps what the run gave.
func (s *Service) run(ctx context.Context, c Call, row allowlist.Tool) Call {
	args, err := c.Arguments()
	var res runner.Result
	if err == nil {
		res, err = s.d.Runner.Exec(ctx, row, args)
	}
	now := s.opts.Now()
	var ch Change
	ev := EventRan
	switch {
	case errors.Is(err, runner.ErrChanged), errors.Is(err, runner.ErrNotEnabled):
		ch, ev = Change{State: StateVoid, Finished: now, Reason: "it changed just before it ran"}, EventVoided
	case err != nil:
		// A failed run is never run again: whether it reached the server is not always known.
		s.log.Info("pending: an approved call could not be run", "call", c.ID, "tool", c.Tool, "err", err)
		ch = Change{State: StateRan, Finished: now, Reason: reveal.CutError(err.Error(), 200),
			Result: &Result{Output: s.failureWords(c, err), IsError: true}}
	default:
		r, rerr := resultOf(res)
		if rerr != nil {
			s.log.Error("pending: keep a call's result", "call", c.ID, "err", rerr)
		}
		ch = Change{State: StateRan, Finished: now, Result: r}
	}
	got, err := s.transition(ctx, c, running, ch, ev, nil)
	if err != nil {
		// The call stays running, and the next start marks it interrupted.
		s.log.Error("pending: keep what a call's run gave", "call", c.ID, "err", err)
		return c
	}
	return got
}

// resultOf is what the call keeps of a run: its output, and its MCP content as JSON.
func resultOf(res runner.Result) (*Result, error) {
	r := &Result{Output: res.Output, IsError: res.IsError, Truncated: res.Truncated, Structured: res.Structured}
	if res.Content == nil {
		return r, nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return r, fmt.Errorf("encode the result's content: %w", err)
	}
	r.Content = b
	return r, nil
}

// Blocks are the result's MCP content blocks, as the run gave them; nil for a local command's
// result, or once dropped.
func (r Result) Blocks() ([]sdk.Content, error) {
	if len(r.Content) == 0 {
		return nil, nil
	}
	var wire sdk.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":`+string(r.Content)+`}`), &wire); err != nil {
		return nil, fmt.Errorf("decode a kept result's content: %w", err)
	}
	return wire.Content, nil
}

// failureWords say why an approved call could not be run, as a plain tool error, never the
// internal error.
func (s *Service) failureWords(c Call, err error) string {
	if s.d.Lock.Locked() {
		// The lock came between the approval and the run: a locked manager sends nothing.
		return "Maven was locked before it could run it, so nothing was done; ask again once it is unlocked."
	}
	what := "The server " + c.Server()
	if c.Server() == "" {
		what = "The command " + c.Tool
	}
	switch {
	case errors.Is(err, runner.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return what + " did not answer in time."
	case c.Server() == "":
		return what + " could not be run."
	}
	return what + " could not be reached, or could not run it."
}

// unlike says why row, as read now, is no longer what c was bound to: gone, not enabled, or
// showing another shape or command; "" while it is. A read that failed otherwise is no reason.
func unlike(c Call, row allowlist.Tool, err error) string {
	switch {
	case errors.Is(err, allowlist.ErrNotFound):
		return "its row is gone"
	case err != nil:
		return ""
	case row.State == allowlist.StateProposed:
		return "its server redefined it, and it waits for you to enable it again"
	case row.State == allowlist.StateDisabled:
		return "it was disabled"
	case row.State == allowlist.StateWithdrawn:
		return "its server no longer offers it"
	case row.ApprovalDigest() != c.Fingerprint || !slices.Equal(row.Cmd, c.Cmd):
		return "its server redefined it"
	}
	return ""
}

// void marks a pending call void, saying why: nothing ran.
func (s *Service) void(ctx context.Context, c Call, why string) (Call, error) {
	got, err := s.transition(ctx, c, []State{StatePending}, Change{State: StateVoid, Finished: s.opts.Now(), Reason: why}, EventVoided, nil)
	var np *NotPendingError
	if errors.As(err, &np) {
		return np.Call, nil
	}
	return got, err
}
