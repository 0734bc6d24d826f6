package auth

import (
	"context"
	"time"
)

// Owner is the one person who may sign in. There is exactly one, created with the first
// registration.
type Owner struct {
	// Handle is the WebAuthn user handle: 32 random bytes, never the row id, never changed.
	Handle    []byte
	CreatedAt time.Time
}

// Passkey is one of the owner's WebAuthn credentials, with what the authenticator last told us
// about it.
type Passkey struct {
	ID                int64
	CredentialID      []byte
	PublicKey         []byte // COSE key
	AttestationType   string
	AttestationFormat string
	AAGUID            []byte
	Transports        []string
	Attachment        string // "platform", "cross-platform" or ""
	SignCount         uint32
	// BackupEligible may never change after registration (a change fails the ceremony);
	// BackupState may, and is stored after every assertion.
	BackupEligible bool
	BackupState    bool
	// UserVerified is the latched flag: the credential has verified its user at least once. It
	// is never what decides a ceremony; each ceremony reads its own authenticator data.
	UserVerified bool
	// PRFEnabled is what the registration's prf:{} probe answered; nil when it did not say.
	PRFEnabled *bool
	Name       string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero until the first assertion after registration
}

// CanUnlock reports whether the passkey said it supports PRF, which the vault needs to unlock.
func (p Passkey) CanUnlock() bool { return p.PRFEnabled != nil && *p.PRFEnabled }

// Store persists the owner, the passkeys and the setup links. db implements it with bun.
type Store interface {
	// Owner returns ErrNoOwner if nobody has registered yet.
	Owner(ctx context.Context) (Owner, error)
	// EnsureOwner stores o if there is no owner yet, and returns the stored owner either way.
	EnsureOwner(ctx context.Context, o Owner) (Owner, error)

	// Passkeys returns every passkey, oldest first.
	Passkeys(ctx context.Context) ([]Passkey, error)
	// Passkey returns ErrPasskeyNotFound if no passkey has that id.
	Passkey(ctx context.Context, id int64) (Passkey, error)
	// InsertPasskey stores a new passkey and sets its ID; ErrDuplicatePasskey if its
	// credential id is already stored.
	InsertPasskey(ctx context.Context, p *Passkey) error
	// RecordAssertion stores what a verified assertion reported: the new sign count, backup
	// state, latched UV flag, and when. ErrPasskeyNotFound if the passkey is gone.
	RecordAssertion(ctx context.Context, id int64, a Assertion) error
	// RenamePasskey returns ErrPasskeyNotFound if no passkey has that id.
	RenamePasskey(ctx context.Context, id int64, name string) error
	// DeletePasskey removes one passkey, atomically refusing with ErrLastPasskey if it is the
	// only one; ErrPasskeyNotFound if no passkey has that id.
	DeletePasskey(ctx context.Context, id int64) error

	// InsertSetupLink stores the hash of a new setup token and, in the same transaction, voids
	// every earlier link not used yet: it expires at created.
	InsertSetupLink(ctx context.Context, hash []byte, created, expires time.Time) error
	// SetupLinkUsable reports whether an unused, unexpired link has that hash.
	SetupLinkUsable(ctx context.Context, hash []byte, now time.Time) (bool, error)
	// UseSetupLink marks the link used, atomically; ErrSetupLinkInvalid if no unused,
	// unexpired link has that hash.
	UseSetupLink(ctx context.Context, hash []byte, now time.Time) error

	// BrowserKey returns the key that signs browser markers, storing fresh as that key first
	// if none is stored yet.
	BrowserKey(ctx context.Context, fresh string) (string, error)
}

// Assertion is what a verified assertion changes on its passkey.
type Assertion struct {
	SignCount    uint32
	BackupState  bool
	UserVerified bool
	At           time.Time
}
