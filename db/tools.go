package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

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
}

// eventRow is the bun model of the append-only tool_events table.
type eventRow struct {
	bun.BaseModel `bun:"table:tool_events"`

	ID     int64  `bun:"id,pk,autoincrement"`
	ToolID int64  `bun:"tool_id"`
	At     string `bun:"at"`
	Actor  string `bun:"actor"`
	Action string `bun:"action"`
	Detail string `bun:"detail"`
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
		EnabledBy: nullString(t.EnabledBy),
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
		EnabledBy: r.EnabledBy.String,
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
	db *bun.DB
}

// NewToolStore returns the allowlist store over db.
func NewToolStore(db *bun.DB) *ToolStore { return &ToolStore{db: db} }

// Update implements allowlist.Store.
func (s *ToolStore) Update(ctx context.Context, fn func(allowlist.TxStore) error) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(toolTx{tx})
	})
}

// GetTool implements allowlist.Store.
func (s *ToolStore) GetTool(ctx context.Context, id int64) (allowlist.Tool, error) {
	return getTool(ctx, s.db, id)
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
	q := s.db.NewSelect().Model(&rows).Order("id")
	if toolID != 0 {
		q = q.Where("tool_id = ?", toolID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out := make([]allowlist.Event, len(rows))
	for i, r := range rows {
		out[i] = allowlist.Event{ID: r.ID, ToolID: r.ToolID, At: parseTime(r.At), Actor: r.Actor,
			Action: r.Action, Detail: json.RawMessage(r.Detail)}
	}
	return out, nil
}

// toolTx implements allowlist.TxStore inside one bun transaction.
type toolTx struct {
	tx bun.Tx
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

func (t toolTx) InsertTool(ctx context.Context, tool *allowlist.Tool) error {
	r, err := toRow(tool)
	if err != nil {
		return err
	}
	r.ID = 0
	if _, err := t.tx.NewInsert().Model(&r).Exec(ctx); err != nil {
		return err
	}
	tool.ID = r.ID
	return nil
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

func (t toolTx) AppendEvent(ctx context.Context, e *allowlist.Event) error {
	return appendEvent(ctx, t.tx, e)
}

func appendEvent(ctx context.Context, db bun.IDB, e *allowlist.Event) error {
	r := eventRow{ToolID: e.ToolID, At: formatTime(e.At), Actor: e.Actor, Action: e.Action, Detail: string(e.Detail)}
	if r.Detail == "" {
		r.Detail = "{}"
	}
	if _, err := db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return eventInsertError(err)
	}
	e.ID = r.ID
	return nil
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
	switch {
	case f.Query == "":
	case utf8.RuneCountInString(f.Query) >= 3:
		// The trigram index answers substrings of three characters or more.
		q = q.Where("id IN (SELECT rowid FROM tools_search WHERE tools_search MATCH ?)", ftsPhrase(f.Query))
	default:
		pat := "%" + escapeLike(f.Query) + "%"
		q = q.Where("(name LIKE ? ESCAPE '!' OR scope LIKE ? ESCAPE '!' OR cmd LIKE ? ESCAPE '!' OR description LIKE ? ESCAPE '!')", pat, pat, pat, pat)
	}
	return q
}

// ftsPhrase makes s one literal FTS5 phrase: inside double quotes nothing is syntax but a
// doubled quote.
func ftsPhrase(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// escapeLike makes s match itself literally in a LIKE pattern with ESCAPE '!'.
func escapeLike(s string) string {
	return strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(s)
}

// stateRank orders the states as OrderByState and OrderByServer want them (and the indexes of
// both migrations hold it).
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
