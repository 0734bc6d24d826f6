package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"maven/app/auth"
)

// ownerRow is the bun model of the one-row owner table.
type ownerRow struct {
	bun.BaseModel `bun:"table:owner"`

	ID         int64  `bun:"id,pk"`
	UserHandle []byte `bun:"user_handle"`
	CreatedAt  string `bun:"created_at"`
}

// passkeyRow is the bun model of the passkeys table.
type passkeyRow struct {
	bun.BaseModel `bun:"table:passkeys"`

	ID                int64          `bun:"id,pk,autoincrement"`
	CredentialID      []byte         `bun:"credential_id"`
	PublicKey         []byte         `bun:"public_key"`
	AttestationType   string         `bun:"attestation_type"`
	AttestationFormat string         `bun:"attestation_format"`
	AAGUID            []byte         `bun:"aaguid"`
	Transports        string         `bun:"transports"`
	Attachment        string         `bun:"attachment"`
	SignCount         int64          `bun:"sign_count"`
	BackupEligible    bool           `bun:"backup_eligible"`
	BackupState       bool           `bun:"backup_state"`
	UserVerified      bool           `bun:"user_verified"`
	PRFEnabled        sql.NullBool   `bun:"prf_enabled"`
	Name              string         `bun:"name"`
	CreatedAt         string         `bun:"created_at"`
	LastUsedAt        sql.NullString `bun:"last_used_at"`
}

// setupLinkRow is the bun model of the setup_links table.
type setupLinkRow struct {
	bun.BaseModel `bun:"table:setup_links"`

	ID        int64          `bun:"id,pk,autoincrement"`
	TokenHash []byte         `bun:"token_hash"`
	CreatedAt string         `bun:"created_at"`
	ExpiresAt string         `bun:"expires_at"`
	UsedAt    sql.NullString `bun:"used_at"`
}

func (r passkeyRow) passkey() (auth.Passkey, error) {
	p := auth.Passkey{
		ID: r.ID, CredentialID: r.CredentialID, PublicKey: r.PublicKey,
		AttestationType: r.AttestationType, AttestationFormat: r.AttestationFormat,
		AAGUID: r.AAGUID, Attachment: r.Attachment, SignCount: uint32(r.SignCount),
		BackupEligible: r.BackupEligible, BackupState: r.BackupState, UserVerified: r.UserVerified,
		Name: r.Name, CreatedAt: parseTime(r.CreatedAt),
	}
	if err := json.Unmarshal([]byte(r.Transports), &p.Transports); err != nil {
		return auth.Passkey{}, fmt.Errorf("passkey %d: decode transports: %w", r.ID, err)
	}
	if r.PRFEnabled.Valid {
		v := r.PRFEnabled.Bool
		p.PRFEnabled = &v
	}
	if r.LastUsedAt.Valid {
		p.LastUsedAt = parseTime(r.LastUsedAt.String)
	}
	return p, nil
}

// AuthStore implements auth.Store.
type AuthStore struct {
	db *bun.DB
}

// NewAuthStore returns the auth store over db.
func NewAuthStore(db *bun.DB) *AuthStore { return &AuthStore{db: db} }

// Owner implements auth.Store.
func (s *AuthStore) Owner(ctx context.Context) (auth.Owner, error) {
	var r ownerRow
	err := s.db.NewSelect().Model(&r).Where("id = 1").Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Owner{}, auth.ErrNoOwner
	}
	if err != nil {
		return auth.Owner{}, fmt.Errorf("get owner: %w", err)
	}
	return auth.Owner{Handle: r.UserHandle, CreatedAt: parseTime(r.CreatedAt)}, nil
}

// EnsureOwner implements auth.Store.
func (s *AuthStore) EnsureOwner(ctx context.Context, o auth.Owner) (auth.Owner, error) {
	r := ownerRow{ID: 1, UserHandle: o.Handle, CreatedAt: formatTime(o.CreatedAt)}
	if _, err := s.db.NewInsert().Model(&r).On("CONFLICT (id) DO NOTHING").Exec(ctx); err != nil {
		return auth.Owner{}, fmt.Errorf("create owner: %w", err)
	}
	return s.Owner(ctx)
}

// Passkeys implements auth.Store.
func (s *AuthStore) Passkeys(ctx context.Context) ([]auth.Passkey, error) {
	var rows []passkeyRow
	if err := s.db.NewSelect().Model(&rows).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list passkeys: %w", err)
	}
	out := make([]auth.Passkey, 0, len(rows))
	for _, r := range rows {
		p, err := r.passkey()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Passkey implements auth.Store.
func (s *AuthStore) Passkey(ctx context.Context, id int64) (auth.Passkey, error) {
	var r passkeyRow
	err := s.db.NewSelect().Model(&r).Where("id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Passkey{}, auth.ErrPasskeyNotFound
	}
	if err != nil {
		return auth.Passkey{}, fmt.Errorf("get passkey %d: %w", id, err)
	}
	return r.passkey()
}

// InsertPasskey implements auth.Store.
func (s *AuthStore) InsertPasskey(ctx context.Context, p *auth.Passkey) error {
	transports := p.Transports
	if transports == nil {
		transports = []string{}
	}
	tj, err := json.Marshal(transports)
	if err != nil {
		return fmt.Errorf("encode transports: %w", err)
	}
	r := passkeyRow{
		CredentialID: p.CredentialID, PublicKey: p.PublicKey, AttestationType: p.AttestationType,
		AttestationFormat: p.AttestationFormat, AAGUID: p.AAGUID, Transports: string(tj),
		Attachment: p.Attachment, SignCount: int64(p.SignCount), BackupEligible: p.BackupEligible,
		BackupState: p.BackupState, UserVerified: p.UserVerified, Name: p.Name,
		CreatedAt: formatTime(p.CreatedAt),
	}
	if p.PRFEnabled != nil {
		r.PRFEnabled = sql.NullBool{Bool: *p.PRFEnabled, Valid: true}
	}
	if !p.LastUsedAt.IsZero() {
		r.LastUsedAt = nullString(formatTime(p.LastUsedAt))
	}
	if _, err := s.db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return fmt.Errorf("insert passkey: %w", mapError(err, map[int]error{codeUnique: auth.ErrDuplicatePasskey}))
	}
	p.ID = r.ID
	return nil
}

// RecordAssertion implements auth.Store.
func (s *AuthStore) RecordAssertion(ctx context.Context, id int64, a auth.Assertion) error {
	res, err := s.db.NewUpdate().Model((*passkeyRow)(nil)).
		Set("sign_count = ?", int64(a.SignCount)).
		Set("backup_state = ?", a.BackupState).
		Set("user_verified = ?", a.UserVerified).
		Set("last_used_at = ?", formatTime(a.At)).
		Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err, auth.ErrPasskeyNotFound)
}

// RenamePasskey implements auth.Store.
func (s *AuthStore) RenamePasskey(ctx context.Context, id int64, name string) error {
	res, err := s.db.NewUpdate().Model((*passkeyRow)(nil)).Set("name = ?", name).Where("id = ?", id).Exec(ctx)
	return affectedOne(res, err, auth.ErrPasskeyNotFound)
}

// DeletePasskey implements auth.Store. The count and the delete share one immediate
// transaction, so two removals racing each other cannot leave the owner with none.
func (s *AuthStore) DeletePasskey(ctx context.Context, id int64) error {
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		exists, err := tx.NewSelect().Model((*passkeyRow)(nil)).Where("id = ?", id).Exists(ctx)
		if err != nil {
			return fmt.Errorf("find passkey %d: %w", id, err)
		}
		if !exists {
			return auth.ErrPasskeyNotFound
		}
		n, err := tx.NewSelect().Model((*passkeyRow)(nil)).Count(ctx)
		if err != nil {
			return fmt.Errorf("count passkeys: %w", err)
		}
		if n <= 1 {
			return auth.ErrLastPasskey
		}
		res, err := tx.NewDelete().Model((*passkeyRow)(nil)).Where("id = ?", id).Exec(ctx)
		return affectedOne(res, err, auth.ErrPasskeyNotFound)
	})
}

// InsertSetupLink implements auth.Store.
func (s *AuthStore) InsertSetupLink(ctx context.Context, hash []byte, created, expires time.Time) error {
	r := setupLinkRow{TokenHash: hash, CreatedAt: formatTime(created), ExpiresAt: formatTime(expires)}
	return s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model((*setupLinkRow)(nil)).Set("expires_at = ?", formatTime(created)).
			Where("used_at IS NULL AND expires_at > ?", formatTime(created)).Exec(ctx); err != nil {
			return fmt.Errorf("void earlier setup links: %w", err)
		}
		if _, err := tx.NewInsert().Model(&r).Exec(ctx); err != nil {
			return fmt.Errorf("insert setup link: %w", err)
		}
		return nil
	})
}

// SetupLinkUsable implements auth.Store.
func (s *AuthStore) SetupLinkUsable(ctx context.Context, hash []byte, now time.Time) (bool, error) {
	ok, err := s.db.NewSelect().Model((*setupLinkRow)(nil)).
		Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hash, formatTime(now)).Exists(ctx)
	if err != nil {
		return false, fmt.Errorf("find setup link: %w", err)
	}
	return ok, nil
}

// UseSetupLink implements auth.Store. One UPDATE both checks and marks, so a link is used once
// even when two requests race for it.
func (s *AuthStore) UseSetupLink(ctx context.Context, hash []byte, now time.Time) error {
	res, err := s.db.NewUpdate().Model((*setupLinkRow)(nil)).
		Set("used_at = ?", formatTime(now)).
		Where("token_hash = ? AND used_at IS NULL AND expires_at > ?", hash, formatTime(now)).Exec(ctx)
	return affectedOne(res, err, auth.ErrSetupLinkInvalid)
}

// browserKeySetting is the settings key of the key that signs browser markers.
const browserKeySetting = "browser_marker_key"

// BrowserKey implements auth.Store. The insert keeps a key already stored, so two first uses
// at once agree on one.
func (s *AuthStore) BrowserKey(ctx context.Context, fresh string) (string, error) {
	r := settingRow{Key: browserKeySetting, Value: fresh, UpdatedAt: formatTime(time.Now())}
	if _, err := s.db.NewInsert().Model(&r).On("CONFLICT (key) DO NOTHING").Exec(ctx); err != nil {
		return "", fmt.Errorf("store the browser marker key: %w", err)
	}
	var stored settingRow
	if err := s.db.NewSelect().Model(&stored).Where("key = ?", browserKeySetting).Scan(ctx); err != nil {
		return "", fmt.Errorf("read the browser marker key: %w", err)
	}
	return stored.Value, nil
}

// Compile-time check that AuthStore is what auth needs.
var _ auth.Store = (*AuthStore)(nil)
