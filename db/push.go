package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"

	"maven/app/notify"
)

// pushSubscriptionRow is the bun model of push_subscriptions.
type pushSubscriptionRow struct {
	bun.BaseModel `bun:"table:push_subscriptions"`

	ID        int64  `bun:"id,pk,autoincrement"`
	Endpoint  string `bun:"endpoint"`
	P256dh    string `bun:"p256dh"`
	Auth      string `bun:"auth"`
	Label     string `bun:"label"`
	CreatedAt string `bun:"created_at"`
}

// PushStore keeps the Web Push subscriptions and, as settings, the VAPID keys; it implements
// notify.Store.
type PushStore struct {
	*SettingsStore
	db *bun.DB
}

// NewPushStore returns the push store over db.
func NewPushStore(db *bun.DB) *PushStore {
	return &PushStore{SettingsStore: NewSettingsStore(db), db: db}
}

// SaveSubscription implements notify.Store. The count and the insert are one transaction, so
// two browsers subscribing at once cannot pass the limit.
func (s *PushStore) SaveSubscription(ctx context.Context, sub *notify.Subscription, limit int) error {
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var existing pushSubscriptionRow
		err := tx.NewSelect().Model(&existing).Where("endpoint = ?", sub.Endpoint).Scan(ctx)
		if err == nil {
			sub.ID, sub.CreatedAt = existing.ID, parseTime(existing.CreatedAt)
			_, err = tx.NewUpdate().Model((*pushSubscriptionRow)(nil)).Set("p256dh = ?", sub.P256dh).
				Set("auth = ?", sub.Auth).Set("label = ?", sub.Label).Where("id = ?", existing.ID).Exec(ctx)
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		n, err := tx.NewSelect().Model((*pushSubscriptionRow)(nil)).Count(ctx)
		if err != nil {
			return err
		}
		if n >= int64(limit) {
			return notify.ErrTooManySubscriptions
		}
		r := pushSubscriptionRow{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth, Label: sub.Label,
			CreatedAt: formatTime(sub.CreatedAt)}
		if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
			return err
		}
		sub.ID = r.ID
		return nil
	})
	if errors.Is(err, notify.ErrTooManySubscriptions) {
		return err
	}
	if err != nil {
		return fmt.Errorf("save a push subscription: %w", mapError(err, nil))
	}
	return nil
}

// Subscriptions implements notify.Store.
func (s *PushStore) Subscriptions(ctx context.Context) ([]notify.Subscription, error) {
	var rows []pushSubscriptionRow
	if err := s.db.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list the push subscriptions: %w", mapError(err, nil))
	}
	out := make([]notify.Subscription, len(rows))
	for i, r := range rows {
		out[i] = notify.Subscription{ID: r.ID, Endpoint: r.Endpoint, P256dh: r.P256dh, Auth: r.Auth, Label: r.Label,
			CreatedAt: parseTime(r.CreatedAt)}
	}
	return out, nil
}

// DeleteSubscription implements notify.Store.
func (s *PushStore) DeleteSubscription(ctx context.Context, id int64) error {
	res, err := s.db.NewDelete().Model((*pushSubscriptionRow)(nil)).Where("id = ?", id).Exec(ctx)
	if err := affectedOne(res, err, notify.ErrNotFound); err != nil {
		if errors.Is(err, notify.ErrNotFound) {
			return err
		}
		return fmt.Errorf("remove push subscription %d: %w", id, err)
	}
	return nil
}

// Compile-time check that the store is what notify needs.
var _ notify.Store = (*PushStore)(nil)
