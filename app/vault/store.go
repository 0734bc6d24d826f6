package vault

import (
	"context"
	"time"
)

// SlotKind says which unlock method a key slot belongs to.
type SlotKind string

// The key slot kinds.
const (
	// SlotPRF is opened by the PRF output of one passkey.
	SlotPRF SlotKind = "prf"
	// SlotRecovery is opened by the recovery code; there is at most one.
	SlotRecovery SlotKind = "recovery"
)

// Slot is the data key wrapped for one unlock method. Nothing in it is secret on its own.
type Slot struct {
	ID   int64 // set by the store
	Kind SlotKind
	// CredentialID and PRFInput are set for SlotPRF only. PRFInput is the random value the
	// browser evaluates for this credential (evalByCredential).
	CredentialID []byte
	PRFInput     []byte
	// KDF is the slot header: how the key-encryption key is derived, with its parameters
	// ("hkdf-sha256", or "argon2id$v=19$m=65536,t=3,p=4").
	KDF        string
	Salt       []byte
	Nonce      []byte
	WrappedKey []byte // AES-256-GCM ciphertext and tag of the data key (x25519: after the ephemeral public key)
	// PublicKey is set for x25519 PRF slots only: the slot's X25519 public key, sealed under the
	// data key (nonce, then ciphertext). Rotation opens it to wrap a new data key for the passkey
	// without the passkey; sealed, so that whoever can write the database cannot swap in a key of
	// their own and receive the next data key.
	PublicKey  []byte
	CreatedAt  time.Time
	LastUsedAt time.Time // zero until the slot first unlocks the vault
}

// Secret is one sealed secret as stored: its name and its AES-256-GCM ciphertext.
type Secret struct {
	Name       string
	Nonce      []byte
	Ciphertext []byte
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Store persists key slots and sealed secrets. db implements it with bun.
type Store interface {
	// Slots returns every key slot, oldest first; an empty list when there is no vault.
	Slots(ctx context.Context) ([]Slot, error)
	// PRFSlot returns the slot of that credential, or ErrNotFound.
	PRFSlot(ctx context.Context, credentialID []byte) (Slot, error)
	// RecoverySlot returns the recovery slot, or ErrNotFound.
	RecoverySlot(ctx context.Context) (Slot, error)
	// CreateVault stores the first slots and sets their IDs, all or none, atomically refusing
	// with ErrExists if any slot is stored already.
	CreateVault(ctx context.Context, slots []*Slot) error
	// Rekey replaces every key slot with slots (setting their IDs) and every secret's nonce and
	// ciphertext with those of secrets, in one transaction: a data key's rotation. It refuses,
	// changing nothing, if the stored secrets are not exactly those named in secrets.
	Rekey(ctx context.Context, slots []*Slot, secrets []Secret) error
	// PutPRFSlot stores a PRF slot and sets its ID, replacing the slot of the same credential.
	PutPRFSlot(ctx context.Context, s *Slot) error
	// DeletePRFSlot removes the slot of that credential: ErrNotFound if there is none,
	// ErrLastSlot (and nothing removed) if no other slot would be left.
	DeletePRFSlot(ctx context.Context, credentialID []byte) error
	// MarkSlotUsed records when a slot last unlocked the vault; ErrNotFound if it is gone.
	MarkSlotUsed(ctx context.Context, id int64, at time.Time) error

	// Secret returns the sealed secret of that name, or ErrNotFound.
	Secret(ctx context.Context, name string) (Secret, error)
	// SecretNames returns the names of every stored secret, sorted.
	SecretNames(ctx context.Context) ([]string, error)
	// PutSecret stores s, replacing the secret of the same name but keeping its CreatedAt.
	PutSecret(ctx context.Context, s Secret) error
	// DeleteSecret returns ErrNotFound if no secret has that name.
	DeleteSecret(ctx context.Context, name string) error
}
