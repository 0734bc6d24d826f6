package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/uptrace/bun"

	"maven/app/allowlist"
)

// toolRow is the bun model of the tools table.
type toolRow struct {
	bun.BaseModel `bun:"table:tools"`

	ID               int64          `bun:"id,pk,autoincrement"`
	Name             string         `bun:"name"`
	Cmd              string         `bun:"cmd"`
	Scope            string         `bun:"scope"`
	State            string         `bun:"state"`
	Destructive      bool           `bun:"destructive"`
	ReadOnly         bool           `bun:"read_only"`
	Description      string         `bun:"description"`
	InputSchema      string         `bun:"input_schema"`
	Fingerprint      sql.NullString `bun:"fingerprint"`
	Declared         sql.NullString `bun:"declared"`
	PreviousDeclared sql.NullString `bun:"previous_declared"`
	ChangedFields    sql.NullString `bun:"changed_fields"`
	RenameOf         sql.NullString `bun:"rename_of"`
	Source           string         `bun:"source"`
	Provenance       string         `bun:"provenance"`
	CreatedAt        string         `bun:"created_at"`
	UpdatedAt        string         `bun:"updated_at"`
	EnabledAt        sql.NullString `bun:"enabled_at"`
	EnabledBy        sql.NullString `bun:"enabled_by"`
	Confirm          string         `bun:"confirm"`
}

// eventRow is the bun model of the append-only tool_events table, with the repeats counted
// against each event (tool_event_repeats) when it is read.
type eventRow struct {
	bun.BaseModel `bun:"table:tool_events,alias:e"`

	ID         int64          `bun:"id,pk,autoincrement"`
	ToolID     int64          `bun:"tool_id"`
	At         string         `bun:"at"`
	Actor      string         `bun:"actor"`
	Action     string         `bun:"action"`
	Detail     string         `bun:"detail"`
	Repeats    sql.NullInt64  `bun:"repeats,scanonly"`
	LastRepeat sql.NullString `bun:"last_repeat,scanonly"`
	LastDetail sql.NullString `bun:"last_detail,scanonly"`
}

// Times are stored as fixed-width UTC text so that they sort as strings.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(timeLayout, s)
	return t
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func toRow(t *allowlist.Tool) (toolRow, error) {
	cmd, err := json.Marshal(t.Cmd)
	if err != nil {
		return toolRow{}, fmt.Errorf("encode cmd: %w", err)
	}
	r := toolRow{
		ID: t.ID, Name: t.Name, Cmd: string(cmd), Scope: t.Scope, State: string(t.State),
		Destructive: t.Destructive, ReadOnly: t.ReadOnly, Description: t.Description,
		InputSchema: string(t.InputSchema), Fingerprint: nullString(t.Fingerprint),
		Declared: nullString(t.Declared), PreviousDeclared: nullString(t.PreviousDeclared),
		RenameOf: nullString(t.RenameOf), Source: t.Source, Provenance: t.Provenance,
		CreatedAt: formatTime(t.CreatedAt), UpdatedAt: formatTime(t.UpdatedAt),
		EnabledBy: nullString(t.EnabledBy), Confirm: string(t.Confirm),
	}
	if r.Confirm == "" {
		r.Confirm = string(allowlist.ConfirmVoice)
	}
	if r.InputSchema == "" {
		r.InputSchema = "{}"
	}
	if len(t.ChangedFields) > 0 {
		b, err := json.Marshal(t.ChangedFields)
		if err != nil {
			return toolRow{}, fmt.Errorf("encode changed fields: %w", err)
		}
		r.ChangedFields = nullString(string(b))
	}
	if t.EnabledAt != nil {
		r.EnabledAt = nullString(formatTime(*t.EnabledAt))
	}
	return r, nil
}

func (r toolRow) tool() (allowlist.Tool, error) {
	t := allowlist.Tool{
		ID: r.ID, Name: r.Name, Scope: r.Scope, State: allowlist.State(r.State),
		Destructive: r.Destructive, ReadOnly: r.ReadOnly, Description: r.Description,
		InputSchema: json.RawMessage(r.InputSchema), Fingerprint: r.Fingerprint.String,
		Declared: r.Declared.String, PreviousDeclared: r.PreviousDeclared.String,
		RenameOf: r.RenameOf.String, Source: r.Source, Provenance: r.Provenance,
		CreatedAt: parseTime(r.CreatedAt), UpdatedAt: parseTime(r.UpdatedAt),
		EnabledBy: r.EnabledBy.String, Confirm: allowlist.Confirm(r.Confirm),
	}
	if err := json.Unmarshal([]byte(r.Cmd), &t.Cmd); err != nil {
		return allowlist.Tool{}, fmt.Errorf("tool %d: decode cmd: %w", r.ID, err)
	}
	if r.ChangedFields.Valid {
		if err := json.Unmarshal([]byte(r.ChangedFields.String), &t.ChangedFields); err != nil {
			return allowlist.Tool{}, fmt.Errorf("tool %d: decode changed fields: %w", r.ID, err)
		}
	}
	if r.EnabledAt.Valid {
		at := parseTime(r.EnabledAt.String)
		t.EnabledAt = &at
	}
	return t, nil
}

// ToolStore implements allowlist.Store.
type ToolStore struct {
	db    *bun.DB
	stmts *stmtCache

	getRunnableOnce sync.Once
	getRunnable     *sql.Stmt
	getRunnableErr  error
}

// NewToolStore returns the allowlist store over db.
func NewToolStore(db *bun.DB) *ToolStore { return &ToolStore{db: db, stmts: newStmtCache(db.DB)} }

// Update implements allowlist.Store.
func (s *ToolStore) Update(ctx context.Context, fn func(allowlist.TxStore) error) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(toolTx{tx: tx, stmts: s.stmts})
	})
}

// GetTool implements allowlist.Store.
func (s *ToolStore) GetTool(ctx context.Context, id int64) (allowlist.Tool, error) {
	return getTool(ctx, s.db, id)
}

// GetRunnable implements allowlist.Store. The Executor calls it before every run, so it reads
// three columns through a statement prepared once, not the whole row through bun's reflection.
func (s *ToolStore) GetRunnable(ctx context.Context, id int64) (allowlist.Runnable, error) {
	s.getRunnableOnce.Do(func() {
		s.getRunnable, s.getRunnableErr = s.db.DB.PrepareContext(context.Background(),
			"SELECT state, fingerprint, cmd FROM tools WHERE id = ?")
	})
	if s.getRunnableErr != nil {
		return allowlist.Runnable{}, fmt.Errorf("prepare the runnable read: %w", s.getRunnableErr)
	}
	var state, cmd string
	var fingerprint sql.NullString
	err := s.getRunnable.QueryRowContext(ctx, id).Scan(&state, &fingerprint, &cmd)
	if errors.Is(err, sql.ErrNoRows) {
		return allowlist.Runnable{}, allowlist.ErrNotFound
	}
	if err != nil {
		return allowlist.Runnable{}, fmt.Errorf("read tool %d: %w", id, err)
	}
	r := allowlist.Runnable{State: allowlist.State(state), Fingerprint: fingerprint.String}
	if err := json.Unmarshal([]byte(cmd), &r.Cmd); err != nil {
		return allowlist.Runnable{}, fmt.Errorf("tool %d: decode cmd: %w", id, err)
	}
	return r, nil
}

// ListTools implements allowlist.Store.
func (s *ToolStore) ListTools(ctx context.Context, f allowlist.Filter) ([]allowlist.Tool, error) {
	return listTools(ctx, s.db, f)
}

// CountByState implements allowlist.Store.
func (s *ToolStore) CountByState(ctx context.Context, f allowlist.Filter) (map[allowlist.State]int, error) {
	return countByState(ctx, s.db, f)
}

// ListEvents implements allowlist.Store.
func (s *ToolStore) ListEvents(ctx context.Context, toolID int64) ([]allowlist.Event, error) {
	var rows []eventRow
	q := s.db.NewSelect().Model(&rows).ColumnExpr("e.*").
		ColumnExpr("r.count AS repeats, r.last_at AS last_repeat, r.last_detail AS last_detail").
		Join("LEFT JOIN tool_event_repeats AS r ON r.event_id = e.id").Order("e.id")
	if toolID != 0 {
		q = q.Where("e.tool_id = ?", toolID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]allowlist.Event, len(rows))
	for i, r := range rows {
		out[i] = r.event()
	}
	return out, nil
}

// toolTx implements allowlist.TxStore inside one bun transaction; its batch inserts go through
// stmts, if it has one.
type toolTx struct {
	tx    bun.Tx
	stmts *stmtCache
}

func (t toolTx) GetTool(ctx context.Context, id int64) (allowlist.Tool, error) {
	return getTool(ctx, t.tx, id)
}

func (t toolTx) FindByCmd(ctx context.Context, scope string, cmd []string) (allowlist.Tool, error) {
	b, err := json.Marshal(cmd)
	if err != nil {
		return allowlist.Tool{}, fmt.Errorf("encode cmd: %w", err)
	}
	return findTool(ctx, t.tx, "scope = ? AND cmd = ?", scope, string(b))
}

func (t toolTx) FindByName(ctx context.Context, name string) (allowlist.Tool, error) {
	return findTool(ctx, t.tx, "name = ?", name)
}

func (t toolTx) ListTools(ctx context.Context, f allowlist.Filter) ([]allowlist.Tool, error) {
	return listTools(ctx, t.tx, f)
}

// insertBatch is how many rows one INSERT writes at most. A discovery inserts a whole list:
// in one statement per batch the search index is flushed once per batch instead of once per
// statement (FTS5 flushes its pending terms at every statement of a transaction it is in).
const insertBatch = 200

func (t toolTx) InsertTools(ctx context.Context, tools []*allowlist.Tool) error {
	for start := 0; start < len(tools); start += insertBatch {
		batch := tools[start:min(start+insertBatch, len(tools))]
		args := make([]any, 0, len(batch)*toolInsertArity)
		for _, tool := range batch {
			r, err := toRow(tool)
			if err != nil {
				return err
			}
			args = append(args, r.Name, r.Cmd, r.Scope, r.State, r.Destructive, r.ReadOnly, r.Description,
				r.InputSchema, r.Fingerprint, r.Declared, r.PreviousDeclared, r.ChangedFields, r.RenameOf,
				r.Source, r.Provenance, r.CreatedAt, r.UpdatedAt, r.EnabledAt, r.EnabledBy)
		}
		// Values are bound, not written into the SQL text: a batch of descriptions and schemas
		// is then not parsed as SQL. RETURNING gives the rows in no promised order: each id is
		// matched by its name.
		res, err := t.stmts.query(ctx, t.tx.Tx, "INSERT INTO tools ("+toolInsertColumns+") VALUES "+
			placeholders(len(batch), toolInsertArity)+" RETURNING id, name", args...)
		if err != nil {
			return toolInsertError(err)
		}
		byName := make(map[string]int64, len(batch))
		for res.Next() {
			var id int64
			var name string
			if err := res.Scan(&id, &name); err != nil {
				res.Close()
				return err
			}
			byName[name] = id
		}
		if err := res.Close(); err != nil {
			return toolInsertError(err)
		}
		if err := res.Err(); err != nil {
			return toolInsertError(err)
		}
		for _, tool := range batch {
			if tool.ID = byName[tool.Name]; tool.ID == 0 {
				return fmt.Errorf("insert tool %q: no id came back", tool.Name)
			}
		}
	}
	return nil
}

// toolInsertColumns are the columns InsertTools writes, toolInsertArity of them.
const (
	toolInsertColumns = "name, cmd, scope, state, destructive, read_only, description, input_schema, " +
		"fingerprint, declared, previous_declared, changed_fields, rename_of, source, provenance, " +
		"created_at, updated_at, enabled_at, enabled_by"
	toolInsertArity = 19
)

// placeholders returns rows groups of arity "?" for a multi-row VALUES.
func placeholders(rows, arity int) string {
	one := "(" + strings.Repeat("?, ", arity-1) + "?)"
	var b strings.Builder
	b.Grow(rows * (len(one) + 2))
	for i := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(one)
	}
	return b.String()
}

// toolInsertError maps a broken uniqueness, which is what says a name or an identity is taken,
// keeping SQLite's message (it names the column); the rest as mapError does.
func toolInsertError(err error) error {
	if sqliteCode(err) == codeUnique {
		return fmt.Errorf("%w: %w", allowlist.ErrInvalid, err)
	}
	return mapError(err, nil)
}

func (t toolTx) UpdateTool(ctx context.Context, tool *allowlist.Tool) error {
	r, err := toRow(tool)
	if err != nil {
		return err
	}
	res, err := t.tx.NewUpdate().Model(&r).WherePK().ExcludeColumn("id", "created_at").Exec(ctx)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return allowlist.ErrNotFound
	}
	return nil
}

func (t toolTx) AppendEvents(ctx context.Context, events []allowlist.Event) error {
	for start := 0; start < len(events); start += insertBatch {
		batch := events[start:min(start+insertBatch, len(events))]
		args := make([]any, 0, len(batch)*5)
		for _, e := range batch {
			detail := string(e.Detail)
			if detail == "" {
				detail = "{}"
			}
			args = append(args, e.ToolID, formatTime(e.At), e.Actor, e.Action, detail)
		}
		if _, err := t.stmts.exec(ctx, t.tx.Tx, "INSERT INTO tool_events (tool_id, at, actor, action, detail) VALUES "+
			placeholders(len(batch), 5), args...); err != nil {
			return eventInsertError(err)
		}
	}
	return nil
}

func (t toolTx) TakenNames(ctx context.Context, names []string) (map[string]bool, error) {
	taken := make(map[string]bool, len(names))
	if len(names) == 0 {
		return taken, nil
	}
	var held []string
	if err := t.tx.NewSelect().Table("tools").Column("name").Where("name IN (?)", bun.List(names)).Scan(ctx, &held); err != nil {
		return nil, fmt.Errorf("find names: %w", err)
	}
	for _, n := range held {
		taken[n] = true
	}
	return taken, nil
}

// eventInsertError maps a foreign-key failure, which is what says the row does not exist.
func eventInsertError(err error) error {
	return mapError(err, map[int]error{codeForeignKey: allowlist.ErrNotFound})
}

func getTool(ctx context.Context, db bun.IDB, id int64) (allowlist.Tool, error) {
	return findTool(ctx, db, "id = ?", id)
}

func findTool(ctx context.Context, db bun.IDB, where string, args ...any) (allowlist.Tool, error) {
	var r toolRow
	err := db.NewSelect().Model(&r).Where(where, args...).Limit(1).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return allowlist.Tool{}, allowlist.ErrNotFound
	}
	if err != nil {
		return allowlist.Tool{}, fmt.Errorf("find tool: %w", err)
	}
	return r.tool()
}

// filterTools adds the WHERE clauses of f to q.
func filterTools(q *bun.SelectQuery, f allowlist.Filter) *bun.SelectQuery {
	if f.Scope != "" {
		q = q.Where("scope = ?", f.Scope)
	}
	if f.Source != "" {
		q = q.Where("source = ?", f.Source)
	}
	if len(f.States) > 0 {
		q = q.Where("state IN (?)", bun.List(f.States))
	}
	if f.IDs != nil {
		q = q.Where("id IN (?)", bun.List(append(slices.Clip(f.IDs), 0))) // 0, no row's id, keeps IN () valid
	}
	if f.Query == "" {
		return q
	}
	return matchQuery(q, f.Query)
}

// stateRank orders the states as OrderByState and OrderByServer want them (and the index of
// OrderByServer holds it).
const stateRank = "CASE state WHEN 'proposed' THEN 0 WHEN 'enabled' THEN 1 WHEN 'disabled' THEN 2 ELSE 3 END"

func countByState(ctx context.Context, db bun.IDB, f allowlist.Filter) (map[allowlist.State]int, error) {
	var rows []struct {
		State string `bun:"state"`
		N     int    `bun:"n"`
	}
	q := filterTools(db.NewSelect().Model((*toolRow)(nil)).Column("state").ColumnExpr("count(*) AS n"), f)
	if err := q.Group("state").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("count tools: %w", err)
	}
	out := make(map[allowlist.State]int, len(rows))
	for _, r := range rows {
		out[allowlist.State(r.State)] = r.N
	}
	return out, nil
}

func listTools(ctx context.Context, db bun.IDB, f allowlist.Filter) ([]allowlist.Tool, error) {
	var rows []toolRow
	q := filterTools(db.NewSelect().Model(&rows), f)
	switch f.Order {
	case allowlist.OrderByState:
		q = q.OrderExpr(stateRank).Order("name")
	case allowlist.OrderByServer:
		q = q.Order("scope").OrderExpr(stateRank).Order("name")
	default:
		q = q.Order("id")
	}
	switch {
	case f.Limit > 0:
		q = q.Limit(int64(f.Limit))
	case f.Offset > 0:
		q = q.Limit(math.MaxInt64) // SQLite takes OFFSET only after a LIMIT
	}
	if f.Offset > 0 {
		q = q.Offset(int64(f.Offset))
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	out := make([]allowlist.Tool, 0, len(rows))
	for _, r := range rows {
		t, err := r.tool()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
