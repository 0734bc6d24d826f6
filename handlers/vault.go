package handlers

import (
	"context"

	"maven/app/vault"
)

// Vault is what the handlers need of the daemon's lock state and sealed secrets
// (*vault.Gate). Every method that unlocks, locks or changes a secret tells the rest of the
// daemon itself; the handlers only ask.
type Vault interface {
	LockState
	HasVault() bool
	// Epoch changes at every lock; a session signed in under another epoch is void.
	Epoch() string
	// UnlockWithPRF and UnlockWithRecovery fail with vault.ErrUnlockFailed whatever went wrong,
	// or a *vault.TooManyAttemptsError, untried, while attempts back off.
	UnlockWithPRF(ctx context.Context, credentialID, prfOutput []byte) error
	UnlockWithRecovery(ctx context.Context, code string) error
	// Enroll wraps the data key for a passkey, creating the vault (and returning its recovery
	// code) when there is none yet.
	Enroll(ctx context.Context, credentialID, prfInput, prfOutput []byte) (string, error)
	Lock() bool
	SetSecret(ctx context.Context, name string, value []byte) error
	DeleteSecret(ctx context.Context, name string) error
	SecretNames(ctx context.Context) ([]string, error)
	RegenerateRecovery(ctx context.Context) (string, error)
	RecoveryUsed(ctx context.Context) (bool, error)
	PRFInputs(ctx context.Context) (map[string][]byte, error)
	CanUnlock(ctx context.Context, credentialID []byte) (bool, error)
	ForgetPasskey(ctx context.Context, credentialID []byte) error
}

// Compile-time check that *vault.Gate is what the handlers need.
var _ Vault = (*vault.Gate)(nil)

// noVault is the Vault of a web app built without one (tests of other areas): nothing to
// unlock, nothing to seal.
type noVault struct{ LockState }

func (noVault) HasVault() bool { return false }
func (noVault) Epoch() string  { return "" }
func (noVault) UnlockWithPRF(context.Context, []byte, []byte) error {
	return vault.ErrNoVault
}
func (noVault) UnlockWithRecovery(context.Context, string) error { return vault.ErrNoVault }
func (noVault) Enroll(context.Context, []byte, []byte, []byte) (string, error) {
	return "", vault.ErrNoVault
}
func (noVault) Lock() bool                                           { return false }
func (noVault) SetSecret(context.Context, string, []byte) error      { return vault.ErrNoVault }
func (noVault) DeleteSecret(context.Context, string) error           { return vault.ErrNoVault }
func (noVault) SecretNames(context.Context) ([]string, error)        { return nil, vault.ErrNoVault }
func (noVault) RegenerateRecovery(context.Context) (string, error)   { return "", vault.ErrNoVault }
func (noVault) RecoveryUsed(context.Context) (bool, error)           { return false, nil }
func (noVault) PRFInputs(context.Context) (map[string][]byte, error) { return nil, nil }
func (noVault) CanUnlock(context.Context, []byte) (bool, error)      { return false, nil }
func (noVault) ForgetPasskey(context.Context, []byte) error          { return nil }
