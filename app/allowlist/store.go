package allowlist

import "context"

// Store persists rows and their events. db implements it with bun on SQLite.
type Store interface {
	// Update runs fn in one transaction; if fn returns an error nothing it wrote is kept.
	Update(ctx context.Context, fn func(TxStore) error) error
	// GetTool returns ErrNotFound if no row has that id.
	GetTool(ctx context.Context, id int64) (Tool, error)
	// ListTools returns the rows that match filter, ordered by id.
	ListTools(ctx context.Context, filter Filter) ([]Tool, error)
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
	// InsertTool stores a new row and sets its ID.
	InsertTool(ctx context.Context, t *Tool) error
	// UpdateTool overwrites the row with t.ID; ErrNotFound if there is none.
	UpdateTool(ctx context.Context, t *Tool) error
	// AppendEvent adds one event to the audit trail and sets its ID.
	AppendEvent(ctx context.Context, e *Event) error
}

// Filter selects rows. Zero fields select everything.
type Filter struct {
	Scope  string
	States []State
	Source string
}
