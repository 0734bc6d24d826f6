package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// refreshSchedule says when a connected session lists its tools again: every RefreshInterval,
// on a list_changed (but no sooner than RefreshGap after the last list), and, after a list that
// failed, sooner than the period, with backoff. A list_changed that comes within the gap waits
// for it to pass: a server announcing changes without end gets one refresh per gap, not a
// refresh loop that keeps a core busy and, if its list churns, the audit trail growing.
type refreshSchedule struct {
	gap        time.Duration
	ticker     *time.Ticker // the periodic refresh
	gapTimer   *time.Timer  // fires when a list_changed that came within the gap may be served
	gapPending bool         // gapTimer is armed
	retry      *time.Timer  // fires when a failed list is tried again
	retryBo    backoff
	last       time.Time // when the last list ended
}

func newRefreshSchedule(o ManagerOptions) *refreshSchedule {
	return &refreshSchedule{
		gap:      o.RefreshGap,
		ticker:   time.NewTicker(o.RefreshInterval),
		gapTimer: stoppedTimer(),
		retry:    stoppedTimer(),
		retryBo:  backoff{min: o.BackoffMin, max: o.BackoffMax},
	}
}

func stoppedTimer() *time.Timer {
	t := time.NewTimer(0)
	t.Stop()
	return t
}

func (r *refreshSchedule) stop() {
	r.ticker.Stop()
	r.gapTimer.Stop()
	r.retry.Stop()
}

// requested is told of a list_changed. It reports whether to list now; if not, the gap timer
// fires once the gap since the last list has passed.
func (r *refreshSchedule) requested() bool {
	wait := r.gap - time.Since(r.last)
	if wait <= 0 {
		return true
	}
	if !r.gapPending {
		r.gapTimer.Reset(wait)
		r.gapPending = true
	}
	return false
}

// starting is told that a list begins: it serves whatever was waiting.
func (r *refreshSchedule) starting() {
	r.retry.Stop()
	r.gapTimer.Stop()
	r.gapPending = false
}

// ended is told that a list ended; a failed one that may be retried is, after a backoff.
func (r *refreshSchedule) ended(ok, retry bool) {
	r.last = time.Now()
	switch {
	case ok:
		r.retryBo.reset()
	case retry:
		r.retry.Reset(r.retryBo.next())
	}
}

// refresh lists the session's tools and reconciles them. It returns an error only when the
// session must end: the server could not be reached at all (then the supervisor says so at
// once instead of after the keepalive gives up), or it went over its churn budget. Any other
// failure leaves the session up, since calls may still work, withdraws nothing, and is tried
// again soon.
func (s *supervisor) refresh(ctx context.Context, sess *session, sched *refreshSchedule) error {
	sched.starting()
	err := s.refreshTools(ctx, sess.ctx, sess.cs)
	fatal := err != nil && (connectionLost(err) || errors.Is(err, ErrTooManyChanges))
	sched.ended(err == nil, err != nil && !fatal && sess.ctx.Err() == nil)
	if fatal {
		return err
	}
	return nil
}

// refreshTools lists every tool and, only if the list is complete, reconciles it.
func (s *supervisor) refreshTools(ctx, sessCtx context.Context, cs *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(sessCtx, s.m.opts.ListTimeout)
	tools, err := listTools(lctx, cs, s.m.maxPages, s.m.maxTools)
	cancel()
	if sessCtx.Err() != nil {
		// The session is ending (lock, shutdown): whatever arrived is not reconciled.
		return fmt.Errorf("tools/list: %w", sessCtx.Err())
	}
	if err != nil {
		err = fmt.Errorf("tools/list: %w", err)
		msg := s.errText(err)
		s.update(func(st *ServerStatus) { st.LastError = msg })
		s.logger.Warn("mcp tool list failed; nothing reconciled", "error", msg)
		return err
	}
	if err := s.m.rec.Reconcile(ctx, s.name, tools); errors.Is(err, ErrTooManyChanges) {
		return err // the supervisor stops listening to it (stopListening)
	} else if err != nil {
		err = fmt.Errorf("reconcile: %w", err)
		msg := s.errText(err)
		s.update(func(st *ServerStatus) { st.LastError = msg })
		s.logger.Error("mcp reconcile failed", "error", msg)
		return err
	}
	s.update(func(st *ServerStatus) {
		st.Tools = len(tools)
		st.LastError = ""
	})
	s.logger.Debug("mcp tools reconciled", "tools", len(tools))
	return nil
}

// listTools follows the cursors of tools/list to the end. Past maxPages pages or maxTools
// tools, or when a cursor comes back, the list is incomplete and nothing is returned.
func listTools(ctx context.Context, cs *sdk.ClientSession, maxPages, maxTools int) ([]*sdk.Tool, error) {
	var tools []*sdk.Tool
	params := &sdk.ListToolsParams{}
	seen := map[string]bool{}
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("more than %d pages: %w", maxPages, ErrIncompleteList)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if len(tools) > maxTools {
			return nil, fmt.Errorf("more than %d tools: %w", maxTools, ErrIncompleteList)
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("cursor %.40q came back: %w", res.NextCursor, ErrIncompleteList)
		}
		seen[res.NextCursor] = true
		params = &sdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// connectionLost reports whether err says the server could not be reached at all (the process
// is gone, the connection was refused or closed), as opposed to an answer it gave.
// The transport-level causes are checked first: go-sdk wraps a refused HTTP request in a
// JSON-RPC "rejected by transport" error too.
func connectionLost(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, sdk.ErrConnectionClosed) || errors.As(err, &opErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
