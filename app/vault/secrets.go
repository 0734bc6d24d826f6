package vault

import (
	"context"
	"errors"
	"fmt"
)

// ValidName reports whether name can name a secret: 1 to 64 of A-Z a-z 0-9 _ . -, the names a
// config's ${secret:NAME} can refer to.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// Set seals value under name, replacing any secret of that name. The caller still owns value
// (and zeroes it). ErrLocked unless unlocked; ErrInvalid for a bad name or a value over
// MaxSecretSize.
func (v *Vault) Set(ctx context.Context, name string, value []byte) error {
	if !ValidName(name) {
		return fmt.Errorf("set secret: %w: a name is 1 to 64 of A-Z a-z 0-9 _ . -", ErrInvalid)
	}
	return v.seal(ctx, name, value)
}

// seal seals value under the stored name, which Set has checked or Maven chose.
func (v *Vault) seal(ctx context.Context, name string, value []byte) error {
	if len(value) > MaxSecretSize {
		return fmt.Errorf("set secret %s: %w: the value is over %d bytes", name, ErrInvalid, MaxSecretSize)
	}
	// Sealed and stored under the read lock, so a rotation cannot re-key the secrets between
	// the two and leave this one under the old key.
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.key == nil {
		return ErrLocked
	}
	nonce, ct := v.key.gcm.seal(value, secretAD(name))
	now := v.now()
	s := Secret{Name: name, Nonce: nonce, Ciphertext: ct, CreatedAt: now, UpdatedAt: now}
	if err := v.store.PutSecret(ctx, s); err != nil {
		return fmt.Errorf("set secret %s: %w", name, err)
	}
	return nil
}

// Get opens the secret of that name into a new buffer. The caller owns it and zeroes it
// (clear) as soon as it is done with it: the vault keeps no copy, and Lock cannot reach this
// one. ErrLocked unless unlocked; ErrNotFound if there is none; ErrTampered if it fails
// authentication.
func (v *Vault) Get(ctx context.Context, name string) ([]byte, error) {
	if !ValidName(name) {
		// Not a secret's name: Maven's own sealed records are not for looking up.
		return nil, fmt.Errorf("secret %q: %w", name, ErrNotFound)
	}
	if v.Locked() {
		return nil, ErrLocked
	}
	s, err := v.store.Secret(ctx, name)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return v.open(s)
}

// open opens a stored secret with the data key.
func (v *Vault) open(s Secret) ([]byte, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.key == nil {
		return nil, ErrLocked
	}
	pt, err := v.key.gcm.open(s.Nonce, s.Ciphertext, secretAD(s.Name))
	if errors.Is(err, errOpen) {
		return nil, fmt.Errorf("secret %s: %w", s.Name, ErrTampered)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", s.Name, err)
	}
	return pt, nil
}

// Names lists the names of the owner's stored secrets, sorted. ErrLocked unless unlocked.
func (v *Vault) Names(ctx context.Context) ([]string, error) {
	if v.Locked() {
		return nil, ErrLocked
	}
	stored, err := v.store.SecretNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	// Maven's own sealed records (OAuth credentials) are not the owner's secrets.
	names := stored[:0]
	for _, n := range stored {
		if ValidName(n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// Delete removes a secret. ErrLocked unless unlocked; ErrNotFound if there is none.
func (v *Vault) Delete(ctx context.Context, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("delete secret %q: %w", name, ErrNotFound)
	}
	if v.Locked() {
		return ErrLocked
	}
	if err := v.store.DeleteSecret(ctx, name); err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}

// Lookup is Get for ${secret:NAME} expansion: the value and true, or nil and false while locked
// or if it cannot be read for any reason. The caller owns the value and zeroes it when done.
func (v *Vault) Lookup(name string) ([]byte, bool) {
	b, err := v.Get(context.Background(), name)
	if err != nil {
		return nil, false
	}
	return b, true
}
