package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"maven/app/notify"
	"maven/app/pending"
)

// pendingRow is the bun model of pending_calls.
type pendingRow struct {
	bun.BaseModel `bun:"table:pending_calls"`

	ID          int64          `bun:"id,pk,autoincrement"`
	ClientID    string         `bun:"client_id"`
	ClientName  string         `bun:"client_name"`
	ToolID      int64          `bun:"tool_id"`
	ToolName    string         `bun:"tool_name"`
	Cmd         string         `bun:"cmd"`
	Fingerprint string         `bun:"fingerprint"`
	Args        string         `bun:"args"`
	Absent      string         `bun:"absent"`
	Why         string         `bun:"why"`
	CreatedAt   string         `bun:"created_at"`
	ExpiresAt   string         `bun:"expires_at"`
	State       string         `bun:"state"`
	Reason      string         `bun:"reason"`
	DecidedBy   string         `bun:"decided_by"`
	DecidedAt   sql.NullString `bun:"decided_at"`
	FinishedAt  sql.NullString `bun:"finished_at"`
	Result      sql.NullString `bun:"result"`
	Collected   bool           `bun:"collected"`
	Deliveries  sql.NullString `bun:"deliveries"`
}

func (r pendingRow) call() (pending.Call, error) {
	c := pending.Call{
		ID: r.ID, Client: pending.Client{ID: r.ClientID, Name: r.ClientName}, ToolID: r.ToolID, Tool: r.ToolName,
		Fingerprint: r.Fingerprint, Args: json.RawMessage(r.Args), Why: r.Why,
		Created: parseTime(r.CreatedAt), Expires: parseTime(r.ExpiresAt), State: pending.State(r.State), Reason: r.Reason,
		DecidedBy: r.DecidedBy, DecidedAt: parseTime(r.DecidedAt.String), FinishedAt: parseTime(r.FinishedAt.String),
		Collected: r.Collected,
	}
	if err := json.Unmarshal([]byte(r.Cmd), &c.Cmd); err != nil {
		return pending.Call{}, fmt.Errorf("pending call %d: decode cmd: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.Absent), &c.Absent); err != nil {
		return pending.Call{}, fmt.Errorf("pending call %d: decode absent: %w", r.ID, err)
	}
	if r.Result.Valid {
		c.Result = &pending.Result{}
		if err := json.Unmarshal([]byte(r.Result.String), c.Result); err != nil {
			return pending.Call{}, fmt.Errorf("pending call %d: decode result: %w", r.ID, err)
		}
	}
	if r.Deliveries.Valid {
		if err := json.Unmarshal([]byte(r.Deliveries.String), &c.Deliveries); err != nil {
			return pending.Call{}, fmt.Errorf("pending call %d: decode deliveries: %w", r.ID, err)
		}
		if c.Deliveries == nil {
			c.Deliveries = []notify.Delivery{}
		}
	}
	return c, nil
}

// PendingStore keeps the pending calls; it implements pending.Store.
type PendingStore struct {
	db *bun.DB
}

// NewPendingStore returns the pending calls' store over db.
func NewPendingStore(db *bun.DB) *PendingStore { return &PendingStore{db: db} }

// openStates and finalStates are the states of calls still open and of those done.
var (
	openStates  = []string{string(pending.StatePending), string(pending.StateRunning)}
	finalStates = []string{string(pending.StateRan), string(pending.StateDenied), string(pending.StateExpired),
		string(pending.StateVoid), string(pending.StateInterrupted)}
)

// Submit implements pending.Store. The three reads and the insert are one transaction (BEGIN
// IMMEDIATE): two identical calls at once make one pending call, and a client cannot pass its
// limit by asking twice at once.
func (s *PendingStore) Submit(ctx context.Context, c *pending.Call, now time.Time, limit int) (pending.Call, pending.Submitted, error) {
	cmd, err := json.Marshal(c.Cmd)
	if err != nil {
		return pending.Call{}, 0, fmt.Errorf("encode cmd: %w", err)
	}
	absent := c.Absent
	if absent == nil {
		absent = []string{}
	}
	abs, err := json.Marshal(absent)
	if err != nil {
		return pending.Call{}, 0, fmt.Errorf("encode absent: %w", err)
	}
	at := formatTime(now)
	var got pending.Call
	var how pending.Submitted
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		same := func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("client_id = ? AND tool_id = ? AND fingerprint = ? AND args = ?", c.Client.ID, c.ToolID, c.Fingerprint, string(c.Args)).
				OrderExpr("id DESC").Limit(1)
		}
		var r pendingRow
		err := same(tx.NewSelect().Model(&r)).Where("state = ? AND collected = 0 AND expires_at > ?", pending.StateRan, at).Scan(ctx)
		if err == nil {
			how = pending.Kept
			r.Collected = true
			if _, err := tx.NewUpdate().Model((*pendingRow)(nil)).Set("collected = 1").Where("id = ?", r.ID).Exec(ctx); err != nil {
				return err
			}
			got, err = r.call()
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		err = same(tx.NewSelect().Model(&r)).Where("(state = ? AND expires_at > ?) OR state = ?",
			pending.StatePending, at, pending.StateRunning).Scan(ctx)
		if err == nil {
			how = pending.Joined
			got, err = r.call()
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		n, err := tx.NewSelect().Model((*pendingRow)(nil)).
			Where("client_id = ? AND state = ? AND expires_at > ?", c.Client.ID, pending.StatePending, at).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(limit) {
			return pending.ErrTooMany
		}
		r = pendingRow{ClientID: c.Client.ID, ClientName: c.Client.Name, ToolID: c.ToolID, ToolName: c.Tool, Cmd: string(cmd),
			Fingerprint: c.Fingerprint, Args: string(c.Args), Absent: string(abs), Why: c.Why,
			CreatedAt: formatTime(c.Created), ExpiresAt: formatTime(c.Expires), State: string(c.State)}
		if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
			return err
		}
		how = pending.Created
		got, err = r.call()
		return err
	})
	if errors.Is(err, pending.ErrTooMany) {
		return pending.Call{}, 0, err
	}
	if err != nil {
		return pending.Call{}, 0, fmt.Errorf("submit a pending call: %w", mapError(err, nil))
	}
	return got, how, nil
}

// Get implements pending.Store.
func (s *PendingStore) Get(ctx context.Context, id int64) (pending.Call, error) {
	return s.get(ctx, s.db, id)
}

func (s *PendingStore) get(ctx context.Context, db bun.IDB, id int64) (pending.Call, error) {
	var r pendingRow
	err := db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return pending.Call{}, pending.ErrNotFound
	}
	if err != nil {
		return pending.Call{}, fmt.Errorf("read pending call %d: %w", id, mapError(err, nil))
	}
	return r.call()
}

// Transition implements pending.Store: the state moves in one UPDATE whose WHERE names the
// states it may move from, so of two racing transitions one touches the row and the other
// finds it moved.
func (s *PendingStore) Transition(ctx context.Context, id int64, from []pending.State, ch pending.Change) (pending.Call, error) {
	q := s.db.NewUpdate().Model((*pendingRow)(nil)).Set("state = ?", string(ch.State)).
		Where("id = ?", id).Where("state IN (?)", bun.List(from))
	if ch.Reason != "" {
		q = q.Set("reason = ?", ch.Reason)
	}
	if ch.DecidedBy != "" {
		q = q.Set("decided_by = ?", ch.DecidedBy)
	}
	if !ch.DecidedAt.IsZero() {
		q = q.Set("decided_at = ?", formatTime(ch.DecidedAt))
	}
	if !ch.Finished.IsZero() {
		q = q.Set("finished_at = ?", formatTime(ch.Finished))
	}
	if ch.Result != nil {
		b, err := json.Marshal(ch.Result)
		if err != nil {
			return pending.Call{}, fmt.Errorf("encode pending call %d's result: %w", id, err)
		}
		q = q.Set("result = ?", string(b))
	}
	if !ch.OpenAt.IsZero() {
		q = q.Where("expires_at > ?", formatTime(ch.OpenAt))
	}
	if !ch.DueAt.IsZero() {
		q = q.Where("expires_at <= ?", formatTime(ch.DueAt))
	}
	res, err := q.Exec(ctx)
	if err := affectedOne(res, err, pending.ErrConflict); err != nil {
		if errors.Is(err, pending.ErrConflict) {
			if _, gerr := s.Get(ctx, id); gerr != nil {
				return pending.Call{}, gerr
			}
			return pending.Call{}, err
		}
		return pending.Call{}, fmt.Errorf("pending call %d → %s: %w", id, ch.State, err)
	}
	return s.Get(ctx, id)
}

// Collect implements pending.Store. The content stays until the call expires: another request
// waiting on the same call reads it too.
func (s *PendingStore) Collect(ctx context.Context, id int64) (bool, error) {
	res, err := s.db.NewUpdate().Model((*pendingRow)(nil)).Set("collected = 1").
		Where("id = ? AND state = ? AND collected = 0", id, pending.StateRan).Exec(ctx)
	err = affectedOne(res, err, pending.ErrConflict)
	if errors.Is(err, pending.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("collect pending call %d: %w", id, err)
	}
	return true, nil
}

// SetDeliveries implements pending.Store.
func (s *PendingStore) SetDeliveries(ctx context.Context, id int64, d []notify.Delivery) error {
	if d == nil {
		d = []notify.Delivery{}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode deliveries: %w", err)
	}
	res, err := s.db.NewUpdate().Model((*pendingRow)(nil)).Set("deliveries = ?", string(b)).Where("id = ?", id).Exec(ctx)
	if err := affectedOne(res, err, pending.ErrNotFound); err != nil {
		return fmt.Errorf("keep pending call %d's deliveries: %w", id, err)
	}
	return nil
}

// Open implements pending.Store.
func (s *PendingStore) Open(ctx context.Context) ([]pending.Call, error) {
	return s.list(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("state IN (?)", bun.List(openStates)).Order("id")
	})
}

// OpenFirst implements pending.Store.
func (s *PendingStore) OpenFirst(ctx context.Context, limit int) ([]pending.Call, int, error) {
	calls, err := s.list(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
		// "+state" keeps SQLite off the state index, which would read every open call and sort
		// them: in id order it stops at the limit, past at most the finished calls Sweep keeps.
		return q.Where("+state IN (?)", bun.List(openStates)).Order("id").Limit(int64(limit))
	})
	if err != nil {
		return nil, 0, err
	}
	total, err := s.db.NewSelect().Model((*pendingRow)(nil)).Where("state IN (?)", bun.List(openStates)).Count(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count the open pending calls: %w", mapError(err, nil))
	}
	return calls, int(total), nil
}

// Recent implements pending.Store.
func (s *PendingStore) Recent(ctx context.Context, limit int) ([]pending.Call, error) {
	return s.list(ctx, func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("finished_at IS NOT NULL").Where("state IN (?)", bun.List(finalStates)).
			OrderExpr("finished_at DESC, id DESC").Limit(int64(limit))
	})
}

func (s *PendingStore) list(ctx context.Context, shape func(*bun.SelectQuery) *bun.SelectQuery) ([]pending.Call, error) {
	var rows []pendingRow
	if err := shape(s.db.NewSelect().Model(&rows)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("list pending calls: %w", mapError(err, nil))
	}
	out := make([]pending.Call, 0, len(rows))
	for _, r := range rows {
		c, err := r.call()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Sweep implements pending.Store.
func (s *PendingStore) Sweep(ctx context.Context, now time.Time, keep int) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*pendingRow)(nil)).
			Set("result = json_remove(result, '$.content', '$.structured')").
			Where("expires_at <= ? AND result IS NOT NULL", formatTime(now)).
			Where("json_type(result, '$.content') IS NOT NULL OR json_type(result, '$.structured') IS NOT NULL").
			Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*pendingRow)(nil)).Where("finished_at IS NOT NULL").
			Where("id NOT IN (SELECT id FROM pending_calls WHERE finished_at IS NOT NULL ORDER BY finished_at DESC, id DESC LIMIT ?)", keep).
			Exec(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("sweep the pending calls: %w", mapError(err, nil))
	}
	return nil
}
