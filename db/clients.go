package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"maven/app/clients"
)

// clientRow is the bun model of the clients table.
type clientRow struct {
	bun.BaseModel `bun:"table:clients"`

	ID           string         `bun:"id,pk"`
	Kind         string         `bun:"kind"`
	State        string         `bun:"state"`
	Name         string         `bun:"name"`
	RedirectURIs string         `bun:"redirect_uris"`
	GrantTypes   string         `bun:"grant_types"`
	AuthMethod   string         `bun:"auth_method"`
	SecretHash   []byte         `bun:"secret_hash"`
	Scope        string         `bun:"scope"`
	AllTools     bool           `bun:"all_tools"`
	ToolIDs      string         `bun:"tool_ids"`
	CreatedAt    string         `bun:"created_at"`
	ApprovedAt   sql.NullString `bun:"approved_at"`
	LastSeen     sql.NullString `bun:"last_seen"`
	RevokedAt    sql.NullString `bun:"revoked_at"`
	Calls        int64          `bun:"calls"`
}

func toClientRow(c clients.Client) (clientRow, error) {
	redirects, err := jsonList(c.RedirectURIs)
	if err != nil {
		return clientRow{}, err
	}
	grants, err := jsonList(c.GrantTypes)
	if err != nil {
		return clientRow{}, err
	}
	tools, err := jsonList(c.ToolIDs)
	if err != nil {
		return clientRow{}, err
	}
	return clientRow{ID: c.ID, Kind: string(c.Kind), State: string(c.State), Name: c.Name,
		RedirectURIs: redirects, GrantTypes: grants, AuthMethod: c.AuthMethod, SecretHash: c.SecretHash,
		Scope: c.Scope, AllTools: c.AllTools, ToolIDs: tools, CreatedAt: formatTime(c.CreatedAt),
		ApprovedAt: nullTime(c.ApprovedAt), LastSeen: nullTime(c.LastSeen), RevokedAt: nullTime(c.RevokedAt),
		Calls: c.Calls}, nil
}

func (r clientRow) client() (clients.Client, error) {
	c := clients.Client{ID: r.ID, Kind: clients.Kind(r.Kind), State: clients.State(r.State), Name: r.Name,
		AuthMethod: r.AuthMethod, SecretHash: r.SecretHash, Scope: r.Scope, AllTools: r.AllTools,
		CreatedAt: parseTime(r.CreatedAt), ApprovedAt: parseTime(r.ApprovedAt.String),
		LastSeen: parseTime(r.LastSeen.String), RevokedAt: parseTime(r.RevokedAt.String), Calls: r.Calls}
	for _, f := range []struct {
		raw string
		to  any
	}{{r.RedirectURIs, &c.RedirectURIs}, {r.GrantTypes, &c.GrantTypes}, {r.ToolIDs, &c.ToolIDs}} {
		if err := json.Unmarshal([]byte(f.raw), f.to); err != nil {
			return clients.Client{}, fmt.Errorf("client %s: %w", r.ID, err)
		}
	}
	return c, nil
}

// jsonList is a list as the table keeps it: a JSON array, never null.
func jsonList[T any](list []T) (string, error) {
	if list == nil {
		list = []T{}
	}
	b, err := json.Marshal(list)
	return string(b), err
}

func nullTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(t), Valid: true}
}

// tokenRow is the bun model of the oauth_tokens table.
type tokenRow struct {
	bun.BaseModel `bun:"table:oauth_tokens"`

	Kind      string         `bun:"kind,pk"`
	Signature string         `bun:"signature,pk"`
	RequestID string         `bun:"request_id"`
	ClientID  string         `bun:"client_id"`
	Active    bool           `bun:"active"`
	ExpiresAt sql.NullString `bun:"expires_at"`
	Request   string         `bun:"request"`
}

// ClientStore keeps the agents' clients and the OAuth server's tokens; it implements
// clients.Store.
type ClientStore struct {
	db *bun.DB
}

// NewClientStore returns the client store over db.
func NewClientStore(db *bun.DB) *ClientStore { return &ClientStore{db: db} }

// Client implements clients.Store.
func (s *ClientStore) Client(ctx context.Context, id string) (clients.Client, error) {
	var r clientRow
	err := s.db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return clients.Client{}, fmt.Errorf("%w: %s", clients.ErrNotFound, id)
	}
	if err != nil {
		return clients.Client{}, fmt.Errorf("read client %s: %w", id, mapError(err, nil))
	}
	return r.client()
}

// Clients implements clients.Store.
func (s *ClientStore) Clients(ctx context.Context) ([]clients.Client, error) {
	var rows []clientRow
	if err := s.db.NewSelect().Model(&rows).OrderExpr("created_at DESC, id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list clients: %w", mapError(err, nil))
	}
	out := make([]clients.Client, 0, len(rows))
	for _, r := range rows {
		c, err := r.client()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// AddStatic implements clients.Store.
func (s *ClientStore) AddStatic(ctx context.Context, c clients.Client) error {
	r, err := toClientRow(c)
	if err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var state string
		err := tx.NewSelect().Model((*clientRow)(nil)).Column("state").Where("id = ?", c.ID).Scan(ctx, &state)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.NewInsert().Model(&r).Exec(ctx)
			return mapError(err, nil)
		case err != nil:
			return mapError(err, nil)
		case state != string(clients.StateRevoked):
			return fmt.Errorf("%w: %s", clients.ErrExists, c.Name)
		}
		_, err = tx.NewUpdate().Model(&r).WherePK().Exec(ctx)
		return mapError(err, nil)
	})
}

// Register implements clients.Store.
func (s *ClientStore) Register(ctx context.Context, c clients.Client, expired time.Time, max int) error {
	r, err := toClientRow(c)
	if err != nil {
		return err
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*clientRow)(nil)).
			Where("state = ? AND created_at < ?", clients.StatePending, formatTime(expired)).Exec(ctx); err != nil {
			return mapError(err, nil)
		}
		n, err := tx.NewSelect().Model((*clientRow)(nil)).Where("state = ?", clients.StatePending).Count(ctx)
		if err != nil {
			return mapError(err, nil)
		}
		if n >= int64(max) {
			return clients.ErrTooMany
		}
		_, err = tx.NewInsert().Model(&r).Exec(ctx)
		return mapError(err, nil)
	})
}

// Approve implements clients.Store.
func (s *ClientStore) Approve(ctx context.Context, c clients.Client) error {
	r, err := toClientRow(c)
	if err != nil {
		return err
	}
	if c.Kind == clients.KindMetadata {
		// What the document said when the owner approved it is what is kept.
		_, err := s.db.NewInsert().Model(&r).On("CONFLICT (id) DO UPDATE").
			Set("state = EXCLUDED.state, name = EXCLUDED.name, redirect_uris = EXCLUDED.redirect_uris").
			Set("grant_types = EXCLUDED.grant_types, all_tools = EXCLUDED.all_tools, tool_ids = EXCLUDED.tool_ids").
			Set("approved_at = EXCLUDED.approved_at, revoked_at = NULL").Exec(ctx)
		if err != nil {
			return fmt.Errorf("approve client %s: %w", c.ID, mapError(err, nil))
		}
		return nil
	}
	res, err := s.db.NewUpdate().Model(&r).Column("state", "all_tools", "tool_ids", "approved_at").
		Set("revoked_at = NULL").Where("id = ? AND kind = ?", c.ID, c.Kind).Exec(ctx)
	return affectedOne(res, err, fmt.Errorf("%w: %s", clients.ErrNotFound, c.ID))
}

// SetPolicy implements clients.Store.
func (s *ClientStore) SetPolicy(ctx context.Context, id string, all bool, toolIDs []int64) error {
	tools, err := jsonList(toolIDs)
	if err != nil {
		return err
	}
	res, err := s.db.NewUpdate().Model((*clientRow)(nil)).Set("all_tools = ?, tool_ids = ?", all, tools).
		Where("id = ? AND state = ?", id, clients.StateApproved).Exec(ctx)
	return affectedOne(res, err, fmt.Errorf("%w: %s", clients.ErrNotFound, id))
}

// Revoke implements clients.Store.
func (s *ClientStore) Revoke(ctx context.Context, id string, at time.Time) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*clientRow)(nil)).
			Set("state = ?, revoked_at = ?, secret_hash = CASE WHEN kind = ? THEN NULL ELSE secret_hash END",
				clients.StateRevoked, formatTime(at), clients.KindStatic).
			Where("id = ? AND state = ?", id, clients.StateApproved).Exec(ctx)
		if err := affectedOne(res, err, fmt.Errorf("%w: %s", clients.ErrNotFound, id)); err != nil {
			return err
		}
		_, err = tx.NewDelete().Model((*tokenRow)(nil)).Where("client_id = ?", id).Exec(ctx)
		return mapError(err, nil)
	})
}

// Seen implements clients.Store.
func (s *ClientStore) Seen(ctx context.Context, id string, at time.Time, calls int64) error {
	_, err := s.db.NewUpdate().Model((*clientRow)(nil)).Set("last_seen = ?, calls = calls + ?", formatTime(at), calls).
		Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("record client %s seen: %w", id, mapError(err, nil))
	}
	return nil
}

// DeleteExpired implements clients.Store.
func (s *ClientStore) DeleteExpired(ctx context.Context, pendingBefore, now time.Time) (int, int, error) {
	var nc, nt int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewDelete().Model((*clientRow)(nil)).
			Where("state = ? AND created_at < ?", clients.StatePending, formatTime(pendingBefore)).Exec(ctx)
		if err != nil {
			return err
		}
		if nc, err = res.RowsAffected(); err != nil {
			return err
		}
		res, err = tx.NewDelete().Model((*tokenRow)(nil)).
			Where("expires_at IS NOT NULL AND expires_at < ?", formatTime(now)).Exec(ctx)
		if err != nil {
			return err
		}
		nt, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, 0, mapError(err, nil)
	}
	return int(nc), int(nt), nil
}
