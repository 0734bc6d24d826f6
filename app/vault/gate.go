package vault

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Gate is the daemon's lock state, kept in one place (docs/design.md#rule-19 and
// docs/design.md#rule-22). It owns the Vault and tells the rest of the daemon when the state
// changes: OnUnlock hooks get the open vault's lookup (the MCP manager dials the servers that were
// waiting for a secret), OnLock hooks run after the data key is forgotten (sessions closed, pending
// confirms and step-ups dropped). Hooks must not block: an unlock answers the owner's phone, and
// nothing slow may sit in between. A daemon without a vault is unlocked: there is nothing to
// unlock.
//
// The lookup an OnUnlock hook gets hands out values the caller owns and zeroes when done (see
// Vault.Lookup); after a lock it finds nothing, and whatever a hook kept of the values it must
// zero once its OnLock hook has run.
//
// Every change of state, and every change of the secrets, goes through the Gate, so hooks see
// them in the order they happened.
type Gate struct {
	v   *Vault
	log *slog.Logger

	turn sync.Mutex // held across a transition and its hooks

	mu       sync.Mutex
	exists   bool
	epoch    string
	onUnlock []func(lookup func(name string) ([]byte, bool))
	onLock   []func()
}

// NewGate returns the gate over v, reading whether a vault exists. With one it starts locked.
func NewGate(ctx context.Context, v *Vault, logger *slog.Logger) (*Gate, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ok, err := v.Exists(ctx)
	if err != nil {
		return nil, err
	}
	g := &Gate{v: v, log: logger, exists: ok}
	if ok {
		g.epoch = rand.Text()
	}
	return g, nil
}

// OnUnlock adds f to the hooks run after every unlock, after the vault is created, and after a
// secret is set or deleted (so a server waiting on that secret notices). f gets the open
// vault's lookup.
func (g *Gate) OnUnlock(f func(lookup func(name string) ([]byte, bool))) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onUnlock = append(g.onUnlock, f)
}

// OnLock adds f to the hooks run after every Lock.
func (g *Gate) OnLock(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onLock = append(g.onLock, f)
}

// Locked reports whether a vault exists and its data key is not in memory.
func (g *Gate) Locked() bool {
	return g.HasVault() && g.v.Locked()
}

// HasVault reports whether a vault has been created.
func (g *Gate) HasVault() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.exists
}

// Epoch names the current locked-or-unlocked era: it changes at every Lock, and a daemon with a
// vault starts a new one at each boot. A browser session signed in during an earlier era is void,
// so locking signs every session out (docs/security.md#req-13). It is "" until a vault exists.
func (g *Gate) Epoch() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

// UnlockWithPRF unlocks with the PRF output of an assertion by credentialID that the caller
// has verified; see Vault.UnlockWithPRF for the errors.
func (g *Gate) UnlockWithPRF(ctx context.Context, credentialID, prfOutput []byte) error {
	g.turn.Lock()
	defer g.turn.Unlock()
	if err := g.v.UnlockWithPRF(ctx, credentialID, prfOutput); err != nil {
		return err
	}
	g.log.Info("vault unlocked", "method", "passkey")
	g.unlocked()
	return nil
}

// UnlockWithRecovery unlocks with the recovery code; see Vault.UnlockWithRecovery for the
// errors.
func (g *Gate) UnlockWithRecovery(ctx context.Context, code string) error {
	g.turn.Lock()
	defer g.turn.Unlock()
	if err := g.v.UnlockWithRecovery(ctx, code); err != nil {
		return err
	}
	g.log.Info("vault unlocked", "method", "recovery code")
	g.unlocked()
	return nil
}

// Enroll lets the passkey credentialID unlock the vault, from the PRF output its authenticator
// gave for prfInput. With no vault yet it creates one, with this passkey's slot and the recovery
// slot in one transaction, and returns its recovery code, to be shown once; otherwise the code is
// "". An error means nothing was stored. ErrLocked if a vault exists and is locked; ErrInvalid
// for arguments of the wrong length.
func (g *Gate) Enroll(ctx context.Context, credentialID, prfInput, prfOutput []byte) (string, error) {
	p := PRFResult{CredentialID: credentialID, Input: prfInput, Output: prfOutput}
	if !p.valid() {
		return "", fmt.Errorf("enroll passkey: %w: want a credential ID and 32-byte PRF input and output", ErrInvalid)
	}
	g.turn.Lock()
	defer g.turn.Unlock()
	var code string
	err := ErrExists
	if !g.HasVault() {
		code, err = g.v.Create(ctx, p)
	}
	switch {
	case err == nil:
		g.log.Info("vault created")
	case errors.Is(err, ErrExists):
		// Made by another daemon over this database, or before: add the slot to it.
		code = ""
		err = g.v.AddPRFSlot(ctx, credentialID, prfInput, prfOutput)
	}
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	g.exists = true
	g.mu.Unlock()
	g.unlocked()
	return code, nil
}

// Lock forgets the data key and runs the OnLock hooks. It reports whether the vault was
// unlocked; the hooks run either way, so a lock always ends what it must.
func (g *Gate) Lock() bool {
	g.turn.Lock()
	defer g.turn.Unlock()
	wasOpen := g.HasVault() && !g.v.Locked()
	g.v.Lock()
	g.mu.Lock()
	if g.exists {
		g.epoch = rand.Text()
	}
	hooks := append([]func(){}, g.onLock...)
	g.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	g.log.Info("vault locked", "was_unlocked", wasOpen)
	return wasOpen
}

// SetSecret seals value under name, then tells the OnUnlock hooks, so a server waiting for that
// secret dials. ErrLocked while locked or without a vault; see Vault.Set for the rest.
func (g *Gate) SetSecret(ctx context.Context, name string, value []byte) error {
	g.turn.Lock()
	defer g.turn.Unlock()
	if !g.HasVault() {
		return ErrLocked
	}
	if err := g.v.Set(ctx, name, value); err != nil {
		return err
	}
	g.log.Info("secret set", "name", name)
	g.unlocked()
	return nil
}

// DeleteSecret removes a secret, then tells the OnUnlock hooks, so a server using it goes back
// to locked. ErrLocked while locked; ErrNotFound if there is none.
func (g *Gate) DeleteSecret(ctx context.Context, name string) error {
	g.turn.Lock()
	defer g.turn.Unlock()
	if !g.HasVault() {
		return ErrLocked
	}
	if err := g.v.Delete(ctx, name); err != nil {
		return err
	}
	g.log.Info("secret deleted", "name", name)
	g.unlocked()
	return nil
}

// SecretNames lists the stored secrets' names. ErrLocked while locked or without a vault.
func (g *Gate) SecretNames(ctx context.Context) ([]string, error) {
	if !g.HasVault() {
		return nil, ErrLocked
	}
	return g.v.Names(ctx)
}

// RegenerateRecovery replaces the recovery code and rotates the data key (see
// Vault.RegenerateRecovery), and returns the new code, to be shown once. ErrLocked while locked
// or without a vault.
func (g *Gate) RegenerateRecovery(ctx context.Context) (string, error) {
	g.turn.Lock()
	defer g.turn.Unlock()
	if !g.HasVault() {
		return "", ErrLocked
	}
	r, err := g.v.RegenerateRecovery(ctx)
	if err != nil {
		return "", err
	}
	g.log.Info("recovery code regenerated and data key rotated", "passkeys_dropped", len(r.Dropped), "unreadable_secrets", r.Unreadable)
	for _, id := range r.Dropped {
		g.log.Warn("a passkey can no longer unlock: its slot could not be wrapped for the new data key; let it unlock again on /passkeys",
			"credential", base64.RawURLEncoding.EncodeToString(id))
	}
	return r.Code, nil
}

// RecoveryUsed reports whether the current recovery code has unlocked the vault, so the owner
// should make a new one.
func (g *Gate) RecoveryUsed(ctx context.Context) (bool, error) {
	if !g.HasVault() {
		return false, nil
	}
	return g.v.RecoveryUsed(ctx)
}

// PRFInputs returns the PRF input of every passkey that can unlock, keyed by unpadded base64url
// credential ID.
func (g *Gate) PRFInputs(ctx context.Context) (map[string][]byte, error) {
	return g.v.PRFInputs(ctx)
}

// CanUnlock reports whether the vault holds a slot for the passkey credentialID.
func (g *Gate) CanUnlock(ctx context.Context, credentialID []byte) (bool, error) {
	_, ok, err := g.v.PRFInput(ctx, credentialID)
	return ok, err
}

// ForgetPasskey removes the slot of a passkey that was removed. A passkey without a slot is no
// error.
func (g *Gate) ForgetPasskey(ctx context.Context, credentialID []byte) error {
	err := g.v.RemoveSlot(ctx, credentialID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// unlocked runs the OnUnlock hooks with the vault's lookup. The caller holds turn.
func (g *Gate) unlocked() {
	g.mu.Lock()
	hooks := append([]func(func(string) ([]byte, bool)){}, g.onUnlock...)
	g.mu.Unlock()
	for _, f := range hooks {
		f(g.v.Lookup)
	}
}
