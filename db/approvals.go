package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"maven/app/approval"
)

// commandRow is the bun model of mcp_server_commands.
type commandRow struct {
	bun.BaseModel `bun:"table:mcp_server_commands"`

	ID         int64          `bun:"id,pk,autoincrement"`
	Server     string         `bun:"server"`
	Digest     string         `bun:"digest"`
	Display    string         `bun:"display"`
	SeenAt     string         `bun:"seen_at"`
	ApprovedAt sql.NullString `bun:"approved_at"`
	ApprovedBy sql.NullString `bun:"approved_by"`
}

func (r commandRow) command() approval.Command {
	return approval.Command{
		ID: r.ID, Server: r.Server, Display: r.Display, Digest: r.Digest, SeenAt: parseTime(r.SeenAt),
		ApprovedAt: parseTime(r.ApprovedAt.String), ApprovedBy: r.ApprovedBy.String,
	}
}

// ApprovalStore keeps stdio servers' command lines; it implements approval.Store.
type ApprovalStore struct {
	db *bun.DB
}

// NewApprovalStore returns the approval store over db.
func NewApprovalStore(db *bun.DB) *ApprovalStore { return &ApprovalStore{db: db} }

// SeenCommand implements approval.Store.
func (s *ApprovalStore) SeenCommand(ctx context.Context, server, digest, display string, at time.Time) (bool, error) {
	var approved bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var r commandRow
		err := tx.NewSelect().Model(&r).Where("server = ? AND digest = ?", server, digest).Scan(ctx)
		if err == nil {
			approved = r.ApprovedAt.Valid
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// An older command line that was never approved can no longer start: only the current
		// one is offered for approval.
		if _, err := tx.NewDelete().Model((*commandRow)(nil)).
			Where("server = ? AND approved_at IS NULL", server).Exec(ctx); err != nil {
			return err
		}
		r = commandRow{Server: server, Digest: digest, Display: display, SeenAt: formatTime(at)}
		_, err = tx.NewInsert().Model(&r).Exec(ctx)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record command line of %s: %w", server, err)
	}
	return approved, nil
}

// PendingCommands implements approval.Store. Approved command lines are kept: the last one of
// the server is what a change is shown against, read in the same query.
func (s *ApprovalStore) PendingCommands(ctx context.Context) ([]approval.PendingCommand, error) {
	var rows []struct {
		commandRow
		Approved sql.NullString `bun:"approved"`
	}
	err := s.db.NewSelect().Model(&rows).
		ColumnExpr("c.*").
		ColumnExpr("(SELECT a.display FROM mcp_server_commands AS a WHERE a.server = c.server AND a.approved_at IS NOT NULL"+
			" ORDER BY a.approved_at DESC, a.id DESC LIMIT 1) AS approved").
		ModelTableExpr("mcp_server_commands AS c").
		Where("c.approved_at IS NULL").Order("c.seen_at", "c.id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("list pending command lines: %w", err)
	}
	out := make([]approval.PendingCommand, 0, len(rows))
	for _, r := range rows {
		out = append(out, approval.PendingCommand{ID: r.ID, Server: r.Server, Display: r.Display,
			SeenAt: parseTime(r.SeenAt), Approved: r.Approved.String})
	}
	return out, nil
}

// Command implements approval.Store.
func (s *ApprovalStore) Command(ctx context.Context, id int64) (approval.Command, error) {
	var r commandRow
	err := s.db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return approval.Command{}, approval.ErrNotFound
	}
	if err != nil {
		return approval.Command{}, fmt.Errorf("read command line %d: %w", id, err)
	}
	return r.command(), nil
}

// ApproveCommand implements approval.Store.
func (s *ApprovalStore) ApproveCommand(ctx context.Context, id int64, at time.Time, by string) (approval.Command, error) {
	var c approval.Command
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*commandRow)(nil)).
			Set("approved_at = ?", formatTime(at)).Set("approved_by = ?", by).
			Where("id = ? AND approved_at IS NULL", id).Exec(ctx); err != nil {
			return err
		}
		var r commandRow
		err := tx.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
		if errors.Is(err, sql.ErrNoRows) {
			return approval.ErrNotFound
		}
		if err != nil {
			return err
		}
		c = r.command()
		return nil
	})
	if errors.Is(err, approval.ErrNotFound) {
		return approval.Command{}, err
	}
	if err != nil {
		return approval.Command{}, fmt.Errorf("approve command line %d: %w", id, err)
	}
	return c, nil
}

// Compile-time check that the store is what the approval service needs.
var _ approval.Store = (*ApprovalStore)(nil)
