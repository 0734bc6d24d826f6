package pending

import (
	"context"
	"time"

	"maven/app/allowlist"
)

// Recover marks interrupted every call a crash left running (docs/design.md#rule-31): it was
// approved and its run had begun, so it is never run again by itself. serve calls it once,
// before anything can approve.
func (s *Service) Recover(ctx context.Context) error {
	open, err := s.d.Store.Open(ctx)
	if err != nil {
		return err
	}
	now := s.opts.Now()
	for _, c := range open {
		if c.State != StateRunning {
			continue
		}
		_, err := s.transition(ctx, c, running, Change{State: StateInterrupted, Finished: now,
			Reason: "Maven stopped while it ran; it is not run again by itself"}, EventInterrupted, nil)
		if err != nil {
			return err
		}
		s.log.Warn("pending: a call's run was interrupted by a restart; not run again", "call", c.ID, "tool", c.Tool)
	}
	return nil
}

// Bounds of Run's rounds.
const (
	// longestRound is the longest Run waits between rounds when nothing changes.
	longestRound = time.Minute
	// sweepEvery is how often Run drops what expired calls kept, and the oldest final calls.
	sweepEvery = time.Minute
)

// Run keeps the pending calls true to rules 30–31 until ctx is done: a call past its expiry is
// expired, and one whose row was disabled, redefined or removed is voided, within a moment of
// the allowlist's change (allowlist.Service.Changed). A lock voids nothing. Once a minute it
// sweeps: the content kept for agents of expired calls goes, and the final calls beyond Keep.
func (s *Service) Run(ctx context.Context) {
	var swept time.Time
	for {
		changed := s.d.Rows.Changed()
		next := s.round(ctx)
		if now := s.opts.Now(); now.Sub(swept) >= sweepEvery {
			if err := s.d.Store.Sweep(ctx, now, s.opts.Keep); err != nil && ctx.Err() == nil {
				s.log.Error("pending: sweep the finished calls", "err", err)
			}
			swept = now
		}
		wait := min(max(next.Sub(s.opts.Now()), time.Millisecond), longestRound)
		timer := time.NewTimer(wait)
		select {
		case <-changed:
		case <-s.kick:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

// round expires and voids what is due, and returns when the next pending call expires (at
// most longestRound from now).
func (s *Service) round(ctx context.Context) time.Time {
	now := s.opts.Now()
	next := now.Add(longestRound)
	open, err := s.d.Store.Open(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("pending: read the open calls", "err", err)
		}
		return next
	}
	type read struct {
		row allowlist.Tool
		err error
	}
	rows := map[int64]read{}
	for _, c := range open {
		if c.State != StatePending {
			continue
		}
		if !now.Before(c.Expires) {
			s.expire(ctx, c)
			continue
		}
		r, ok := rows[c.ToolID]
		if !ok {
			r.row, r.err = s.d.Rows.Get(ctx, c.ToolID)
			rows[c.ToolID] = r
		}
		if why := unlike(c, r.row, r.err); why != "" {
			if _, err := s.void(ctx, c, why); err != nil {
				s.log.Error("pending: void a call", "call", c.ID, "err", err)
			}
			continue
		}
		if c.Expires.Before(next) {
			next = c.Expires
		}
	}
	return next
}
