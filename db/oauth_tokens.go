package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"maven/app/clients"
)

// CreateToken implements clients.Store.
func (s *ClientStore) CreateToken(ctx context.Context, t clients.Token) error {
	r := tokenRow{Kind: string(t.Kind), Signature: t.Signature, RequestID: t.RequestID, ClientID: t.ClientID,
		Active: t.Active, ExpiresAt: nullTime(t.ExpiresAt), Request: string(t.Request)}
	if _, err := s.db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return fmt.Errorf("store an OAuth %s: %w", t.Kind, mapError(err, nil))
	}
	return nil
}

// Token implements clients.Store.
func (s *ClientStore) Token(ctx context.Context, kind clients.TokenKind, signature string) (clients.Token, error) {
	var r tokenRow
	err := s.db.NewSelect().Model(&r).Where("kind = ? AND signature = ?", kind, signature).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return clients.Token{}, clients.ErrNotFound
	}
	if err != nil {
		return clients.Token{}, fmt.Errorf("read an OAuth %s: %w", kind, mapError(err, nil))
	}
	return clients.Token{Kind: clients.TokenKind(r.Kind), Signature: r.Signature, RequestID: r.RequestID,
		ClientID: r.ClientID, Active: r.Active, ExpiresAt: parseTime(r.ExpiresAt.String), Request: []byte(r.Request)}, nil
}

// DeactivateToken implements clients.Store.
func (s *ClientStore) DeactivateToken(ctx context.Context, kind clients.TokenKind, signature string) error {
	res, err := s.db.NewUpdate().Model((*tokenRow)(nil)).Set("active = 0").
		Where("kind = ? AND signature = ? AND active = 1", kind, signature).Exec(ctx)
	return affectedOne(res, err, clients.ErrNotFound)
}

// DeleteToken implements clients.Store.
func (s *ClientStore) DeleteToken(ctx context.Context, kind clients.TokenKind, signature string) error {
	_, err := s.db.NewDelete().Model((*tokenRow)(nil)).Where("kind = ? AND signature = ?", kind, signature).Exec(ctx)
	return mapError(err, nil)
}

// DeactivateTokens implements clients.Store.
func (s *ClientStore) DeactivateTokens(ctx context.Context, kind clients.TokenKind, requestID string) error {
	_, err := s.db.NewUpdate().Model((*tokenRow)(nil)).Set("active = 0").
		Where("request_id = ? AND kind = ?", requestID, kind).Exec(ctx)
	return mapError(err, nil)
}

// DeleteTokens implements clients.Store.
func (s *ClientStore) DeleteTokens(ctx context.Context, kind clients.TokenKind, requestID string) error {
	_, err := s.db.NewDelete().Model((*tokenRow)(nil)).Where("request_id = ? AND kind = ?", requestID, kind).Exec(ctx)
	return mapError(err, nil)
}

// RotateRefresh implements clients.Store.
func (s *ClientStore) RotateRefresh(ctx context.Context, requestID, signature string) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*tokenRow)(nil)).Set("active = 0").
			Where("kind = ? AND signature = ? AND request_id = ? AND active = 1", clients.TokenRefresh, signature, requestID).Exec(ctx)
		if err := affectedOne(res, err, clients.ErrTokenSpent); err != nil {
			return err
		}
		if _, err := tx.NewUpdate().Model((*tokenRow)(nil)).Set("active = 0").
			Where("request_id = ? AND kind = ?", requestID, clients.TokenRefresh).Exec(ctx); err != nil {
			return mapError(err, nil)
		}
		_, err = tx.NewDelete().Model((*tokenRow)(nil)).Where("request_id = ? AND kind = ?", requestID, clients.TokenAccess).Exec(ctx)
		return mapError(err, nil)
	})
}
