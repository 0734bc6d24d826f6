package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// settingRow is the bun model of the settings table.
type settingRow struct {
	bun.BaseModel `bun:"table:settings"`

	Key       string `bun:"key,pk"`
	Value     string `bun:"value"`
	UpdatedAt string `bun:"updated_at"`
}

// SettingsStore keeps small daemon-wide values; it implements bearer.Store.
type SettingsStore struct {
	db *bun.DB
}

// NewSettingsStore returns the settings store over db.
func NewSettingsStore(db *bun.DB) *SettingsStore { return &SettingsStore{db: db} }

// Setting implements bearer.Store.
func (s *SettingsStore) Setting(ctx context.Context, key string) (string, error) {
	var r settingRow
	err := s.db.NewSelect().Model(&r).Where("key = ?", key).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", key, err)
	}
	return r.Value, nil
}

// SetSetting implements bearer.Store.
func (s *SettingsStore) SetSetting(ctx context.Context, key, value string) error {
	r := settingRow{Key: key, Value: value, UpdatedAt: formatTime(time.Now())}
	_, err := s.db.NewInsert().Model(&r).On("CONFLICT (key) DO UPDATE").
		Set("value = EXCLUDED.value").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("write setting %s: %w", key, err)
	}
	return nil
}
