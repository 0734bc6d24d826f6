package vault

import (
	"context"
	"errors"
	"fmt"
)

// Rotation is what RegenerateRecovery did.
type Rotation struct {
	// Code is the new recovery code, to be shown once.
	Code string
	// Dropped names the credential IDs of passkeys whose slots could not be wrapped again: a
	// slot of the first format never unlocked since (only its passkey can wrap for it), or one
	// whose sealed public key failed to open (edited in the database). Those passkeys sign in
	// but no longer unlock until they are let unlock again.
	Dropped [][]byte
	// Unreadable names the secrets that failed authentication under the old data key; they
	// are left as they were, and stay unreadable.
	Unreadable []string
}

// RegenerateRecovery rotates the data key and returns a new recovery code, to be shown once:
// a fresh data key is wrapped for every passkey (with the public key its slot keeps, so no
// passkey needs to be present) and for the new code, every secret is sealed again under it, and
// all of it is stored in one transaction. The old code stops working, and the old data key
// opens nothing stored from now on. ErrLocked unless unlocked.
func (v *Vault) RegenerateRecovery(ctx context.Context) (Rotation, error) {
	fresh, err := newDataKey(randomBytes(keySize))
	if err != nil {
		return Rotation{}, fmt.Errorf("rotate the data key: %w", err)
	}
	code := newRecoveryCode()
	defer clear(code)
	// Stretched before taking the lock: an unlock holding the key-derivation turn waits for it.
	rec, err := v.newRecoverySlot(ctx, fresh.raw, code)
	if err != nil {
		fresh.wipe()
		return Rotation{}, fmt.Errorf("rotate the data key: %w", err)
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	if v.key == nil {
		fresh.wipe()
		return Rotation{}, ErrLocked
	}
	r := Rotation{Code: formatRecoveryCode(code)}
	slots, err := v.rewrapSlots(ctx, v.key, fresh, &r)
	if err != nil {
		fresh.wipe()
		return Rotation{}, fmt.Errorf("rotate the data key: %w", err)
	}
	secrets, err := v.resealSecrets(ctx, v.key, fresh, &r)
	if err == nil {
		err = v.store.Rekey(ctx, append([]*Slot{&rec}, slots...), secrets)
	}
	if err != nil {
		fresh.wipe()
		return Rotation{}, fmt.Errorf("rotate the data key: %w", err)
	}
	v.key.wipe()
	v.key = fresh
	return r, nil
}

// rewrapSlots wraps fresh for every passkey slot that old can vouch for, noting the others in r.
func (v *Vault) rewrapSlots(ctx context.Context, old, fresh *dataKey, r *Rotation) ([]*Slot, error) {
	stored, err := v.store.Slots(ctx)
	if err != nil {
		return nil, err
	}
	var out []*Slot
	for _, s := range stored {
		if s.Kind != SlotPRF {
			continue
		}
		pub, err := v.slotPublicKey(old, s)
		if errors.Is(err, errOpen) {
			r.Dropped = append(r.Dropped, s.CredentialID)
			continue
		}
		if err != nil {
			return nil, err
		}
		w, err := v.wrapPRFSlot(fresh, s, pub)
		if err != nil {
			return nil, err
		}
		out = append(out, &w)
	}
	return out, nil
}

// slotPublicKey opens the public key a PRF slot keeps sealed under the data key; errOpen for a
// slot of the first format or a sealed key that fails authentication.
func (v *Vault) slotPublicKey(key *dataKey, s Slot) ([]byte, error) {
	if s.KDF != kdfX25519 || len(s.PublicKey) < nonceSize {
		return nil, errOpen
	}
	return key.gcm.open(s.PublicKey[:nonceSize], s.PublicKey[nonceSize:], adSlotKey+prfBinding(v.rpID, s.CredentialID))
}

// resealSecrets opens every secret under old and seals it under fresh; one that fails to open
// is kept as it is and noted in r.
func (v *Vault) resealSecrets(ctx context.Context, old, fresh *dataKey, r *Rotation) ([]Secret, error) {
	names, err := v.store.SecretNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Secret, 0, len(names))
	for _, name := range names {
		s, err := v.store.Secret(ctx, name)
		if err != nil {
			return nil, err
		}
		pt, err := old.gcm.open(s.Nonce, s.Ciphertext, secretAD(name))
		if err != nil {
			r.Unreadable = append(r.Unreadable, name)
			out = append(out, s)
			continue
		}
		s.Nonce, s.Ciphertext = fresh.gcm.seal(pt, secretAD(name))
		clear(pt)
		out = append(out, s)
	}
	return out, nil
}
