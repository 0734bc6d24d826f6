package allowlist

import (
	"context"
	"encoding/json"
	"time"
)

// Store persists rows and their events. db implements it with bun on SQLite.
type Store interface {
	// Update runs fn in one transaction; if fn returns an error nothing it wrote is kept.
	Update(ctx context.Context, fn func(TxStore) error) error
	// GetTool returns ErrNotFound if no row has that id.
	GetTool(ctx context.Context, id int64) (Tool, error)
	// GetRunnable returns what decides whether the row with that id may run, and nothing more;
	// ErrNotFound if there is none. It is read before every run, so it must be cheap.
	GetRunnable(ctx context.Context, id int64) (Runnable, error)
	// ListTools returns the rows that match filter, ordered by id (or as filter.Order says),
	// at most filter.Limit of them from filter.Offset on.
	ListTools(ctx context.Context, filter Filter) ([]Tool, error)
	// CountByState counts the rows that match filter (ignoring Limit, Offset and Order) in each
	// state; states without rows are absent.
	CountByState(ctx context.Context, filter Filter) (map[State]int, error)
	// ListEvents returns the events of one row (all rows when toolID is 0), oldest first.
	ListEvents(ctx context.Context, toolID int64) ([]Event, error)
}

// TxStore is the part of the store used inside one transaction.
type TxStore interface {
	// GetTool returns ErrNotFound if no row has that id.
	GetTool(ctx context.Context, id int64) (Tool, error)
	// FindByCmd returns the row with that identity, or ErrNotFound.
	FindByCmd(ctx context.Context, scope string, cmd []string) (Tool, error)
	// FindByName returns the row with that local name, or ErrNotFound.
	FindByName(ctx context.Context, name string) (Tool, error)
	// ListTools returns the rows that match filter, ordered by id.
	ListTools(ctx context.Context, filter Filter) ([]Tool, error)
	// InsertTools stores new rows and sets their IDs; ErrInvalid if a name or an identity
	// (scope, cmd) is taken.
	InsertTools(ctx context.Context, tools []*Tool) error
	// TakenNames reports which of names a row holds.
	TakenNames(ctx context.Context, names []string) (map[string]bool, error)
	// UpdateTool overwrites the row with t.ID; ErrNotFound if there is none.
	UpdateTool(ctx context.Context, t *Tool) error
	// AppendEvents adds events to the audit trail, in order. Their IDs are not read back.
	AppendEvents(ctx context.Context, events []Event) error
	// LastEvent returns the row's latest event; ErrNotFound if it has none.
	LastEvent(ctx context.Context, toolID int64) (Event, error)
	// CountRepeat counts one more repeat, at time at and with detail, of the event with that
	// id (see Event.Repeats); ErrNotFound if there is no such event.
	CountRepeat(ctx context.Context, eventID int64, at time.Time, detail json.RawMessage) error
}

// Filter selects rows. Zero fields select everything.
type Filter struct {
	Scope  string
	States []State
	Source string
	// IDs, when not nil, keeps only the rows with these ids.
	IDs []int64
	// Query keeps the rows whose name, scope (and so server), command (and so the MCP tool's
	// own name) or description contains it, case-insensitively for ASCII letters. It is matched
	// literally: % and _ are not wildcards.
	Query string
	// Order is the order of ListTools; the zero value is by id.
	Order Order
	// Limit caps how many rows ListTools returns (0: no cap); Offset skips that many first.
	Limit, Offset int
}

// Order is a row order for ListTools.
type Order int

// The row orders.
const (
	// OrderByID lists rows oldest first.
	OrderByID Order = iota
	// OrderByState lists proposed rows first, then enabled, disabled and withdrawn, each group
	// by name: what needs the owner's attention comes first.
	OrderByState
	// OrderByServer lists rows by scope (local commands, then each MCP server by name), and
	// within one in the order of OrderByState: the /tools page groups them so.
	OrderByServer
)
