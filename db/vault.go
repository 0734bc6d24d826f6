package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"maven/app/vault"
)

// vaultSlotRow is the bun model of the vault_slots table.
type vaultSlotRow struct {
	bun.BaseModel `bun:"table:vault_slots"`

	ID           int64          `bun:"id,pk,autoincrement"`
	Kind         string         `bun:"kind"`
	CredentialID []byte         `bun:"credential_id"` // nil (NULL) for the recovery slot
	PRFInput     []byte         `bun:"prf_input"`
	KDF          string         `bun:"kdf"`
	Salt         []byte         `bun:"salt"`
	Nonce        []byte         `bun:"nonce"`
	WrappedKey   []byte         `bun:"wrapped_key"`
	PublicKey    []byte         `bun:"public_key"` // x25519 prf slots: sealed under the data key
	CreatedAt    string         `bun:"created_at"`
	LastUsedAt   sql.NullString `bun:"last_used_at"`
}

// vaultSecretRow is the bun model of the vault_secrets table.
type vaultSecretRow struct {
	bun.BaseModel `bun:"table:vault_secrets"`

	Name       string `bun:"name,pk"`
	Nonce      []byte `bun:"nonce"`
	Ciphertext []byte `bun:"ciphertext"`
	CreatedAt  string `bun:"created_at"`
	UpdatedAt  string `bun:"updated_at"`
}

func toSlotRow(s *vault.Slot) vaultSlotRow {
	r := vaultSlotRow{
		ID: s.ID, Kind: string(s.Kind), KDF: s.KDF, Salt: s.Salt, Nonce: s.Nonce,
		WrappedKey: s.WrappedKey, CreatedAt: formatTime(s.CreatedAt),
	}
	if s.Kind == vault.SlotPRF {
		r.CredentialID, r.PRFInput, r.PublicKey = s.CredentialID, s.PRFInput, s.PublicKey
	}
	if !s.LastUsedAt.IsZero() {
		r.LastUsedAt = nullString(formatTime(s.LastUsedAt))
	}
	return r
}

func (r vaultSlotRow) slot() vault.Slot {
	s := vault.Slot{
		ID: r.ID, Kind: vault.SlotKind(r.Kind), CredentialID: r.CredentialID, PRFInput: r.PRFInput,
		KDF: r.KDF, Salt: r.Salt, Nonce: r.Nonce, WrappedKey: r.WrappedKey, PublicKey: r.PublicKey,
		CreatedAt: parseTime(r.CreatedAt),
	}
	if r.LastUsedAt.Valid {
		s.LastUsedAt = parseTime(r.LastUsedAt.String)
	}
	return s
}

// VaultStore implements vault.Store.
type VaultStore struct {
	db *bun.DB
}

// NewVaultStore returns the vault store over db.
func NewVaultStore(db *bun.DB) *VaultStore { return &VaultStore{db: db} }

// Slots implements vault.Store.
func (s *VaultStore) Slots(ctx context.Context) ([]vault.Slot, error) {
	var rows []vaultSlotRow
	if err := s.db.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list key slots: %w", err)
	}
	out := make([]vault.Slot, len(rows))
	for i, r := range rows {
		out[i] = r.slot()
	}
	return out, nil
}

// PRFSlot implements vault.Store.
func (s *VaultStore) PRFSlot(ctx context.Context, credentialID []byte) (vault.Slot, error) {
	return s.oneSlot(ctx, "kind = 'prf' AND credential_id = ?", credentialID)
}

// RecoverySlot implements vault.Store.
func (s *VaultStore) RecoverySlot(ctx context.Context) (vault.Slot, error) {
	return s.oneSlot(ctx, "kind = 'recovery'")
}

func (s *VaultStore) oneSlot(ctx context.Context, where string, args ...any) (vault.Slot, error) {
	var r vaultSlotRow
	err := s.db.NewSelect().Model(&r).Where(where, args...).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return vault.Slot{}, vault.ErrNotFound
	}
	if err != nil {
		return vault.Slot{}, fmt.Errorf("get key slot: %w", err)
	}
	return r.slot(), nil
}

// CreateVault implements vault.Store. The count and the inserts share one immediate
// transaction, so two racing creations cannot both win, and a failure between two slots leaves
// none.
func (s *VaultStore) CreateVault(ctx context.Context, slots []*vault.Slot) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*vaultSlotRow)(nil)).Count(ctx)
		if err != nil {
			return fmt.Errorf("count key slots: %w", err)
		}
		if n > 0 {
			return vault.ErrExists
		}
		return insertSlots(ctx, tx, slots)
	})
}

// PutPRFSlot implements vault.Store.
func (s *VaultStore) PutPRFSlot(ctx context.Context, slot *vault.Slot) error {
	if slot.Kind != vault.SlotPRF {
		return fmt.Errorf("put key slot: kind %q is not %q", slot.Kind, vault.SlotPRF)
	}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*vaultSlotRow)(nil)).
			Where("credential_id = ?", slot.CredentialID).Exec(ctx); err != nil {
			return fmt.Errorf("replace key slot: %w", mapError(err, nil))
		}
		return insertSlots(ctx, tx, []*vault.Slot{slot})
	})
}

// Rekey implements vault.Store.
func (s *VaultStore) Rekey(ctx context.Context, slots []*vault.Slot, secrets []vault.Secret) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		n, err := tx.NewSelect().Model((*vaultSecretRow)(nil)).Count(ctx)
		if err != nil {
			return fmt.Errorf("count secrets: %w", mapError(err, nil))
		}
		if int(n) != len(secrets) {
			return fmt.Errorf("rekey: %d secrets are stored but %d were sealed again; try again", n, len(secrets))
		}
		for _, sec := range secrets {
			res, err := tx.NewUpdate().Model((*vaultSecretRow)(nil)).
				Set("nonce = ?", sec.Nonce).Set("ciphertext = ?", sec.Ciphertext).
				Where("name = ?", sec.Name).Exec(ctx)
			if err := affectedOne(res, err, vault.ErrNotFound); err != nil {
				return fmt.Errorf("rekey secret %s: %w", sec.Name, err)
			}
		}
		if _, err := tx.NewDelete().Model((*vaultSlotRow)(nil)).Where("1 = 1").Exec(ctx); err != nil {
			return fmt.Errorf("rekey: delete key slots: %w", mapError(err, nil))
		}
		return insertSlots(ctx, tx, slots)
	})
}

// insertSlots stores slots and sets their IDs; a second recovery slot, or a second slot of one
// credential, is vault.ErrExists (the table's unique indexes).
func insertSlots(ctx context.Context, tx bun.Tx, slots []*vault.Slot) error {
	for _, slot := range slots {
		r := toSlotRow(slot)
		r.ID = 0
		if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
			return fmt.Errorf("insert key slot: %w", mapError(err, map[int]error{codeUnique: vault.ErrExists}))
		}
		slot.ID = r.ID
	}
	return nil
}

// DeletePRFSlot implements vault.Store. The check and the delete share one transaction, so two
// racing removals cannot leave the vault without a slot.
func (s *VaultStore) DeletePRFSlot(ctx context.Context, credentialID []byte) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		others, err := tx.NewSelect().Model((*vaultSlotRow)(nil)).
			Where("credential_id IS NULL OR credential_id != ?", credentialID).Count(ctx)
		if err != nil {
			return fmt.Errorf("count key slots: %w", err)
		}
		res, err := tx.NewDelete().Model((*vaultSlotRow)(nil)).
			Where("kind = 'prf' AND credential_id = ?", credentialID).Exec(ctx)
		if err := affectedOne(res, err, vault.ErrNotFound); err != nil {
			return err
		}
		if others == 0 {
			return vault.ErrLastSlot // rolls the delete back
		}
		return nil
	})
}

// MarkSlotUsed implements vault.Store.
func (s *VaultStore) MarkSlotUsed(ctx context.Context, id int64, at time.Time) error {
	res, err := s.db.NewUpdate().Model((*vaultSlotRow)(nil)).
		Set("last_used_at = ?", formatTime(at)).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err, vault.ErrNotFound)
}

// Secret implements vault.Store.
func (s *VaultStore) Secret(ctx context.Context, name string) (vault.Secret, error) {
	var r vaultSecretRow
	err := s.db.NewSelect().Model(&r).Where("name = ?", name).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return vault.Secret{}, vault.ErrNotFound
	}
	if err != nil {
		return vault.Secret{}, fmt.Errorf("get secret: %w", err)
	}
	return vault.Secret{
		Name: r.Name, Nonce: r.Nonce, Ciphertext: r.Ciphertext,
		CreatedAt: parseTime(r.CreatedAt), UpdatedAt: parseTime(r.UpdatedAt),
	}, nil
}

// SecretNames implements vault.Store.
func (s *VaultStore) SecretNames(ctx context.Context) ([]string, error) {
	names := []string{}
	if err := s.db.NewSelect().Model((*vaultSecretRow)(nil)).Column("name").
		Order("name").Scan(ctx, &names); err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return names, nil
}

// PutSecret implements vault.Store.
func (s *VaultStore) PutSecret(ctx context.Context, sec vault.Secret) error {
	r := vaultSecretRow{
		Name: sec.Name, Nonce: sec.Nonce, Ciphertext: sec.Ciphertext,
		CreatedAt: formatTime(sec.CreatedAt), UpdatedAt: formatTime(sec.UpdatedAt),
	}
	_, err := s.db.NewInsert().Model(&r).On("CONFLICT (name) DO UPDATE").
		Set("nonce = EXCLUDED.nonce").Set("ciphertext = EXCLUDED.ciphertext").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	if err != nil {
		return fmt.Errorf("put secret: %w", err)
	}
	return nil
}

// DeleteSecret implements vault.Store.
func (s *VaultStore) DeleteSecret(ctx context.Context, name string) error {
	res, err := s.db.NewDelete().Model((*vaultSecretRow)(nil)).Where("name = ?", name).Exec(ctx)
	return affectedOne(res, err, vault.ErrNotFound)
}
