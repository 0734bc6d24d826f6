package vault

import (
	"context"
	"time"
)

// SetArgon2ForTest makes v stretch new recovery codes with cheaper parameters, so tests that
// do not measure Argon2id itself stay fast. Unlocking always uses the slot's own header.
func SetArgon2ForTest(v *Vault, passes, memoryKiB uint32, threads uint8) {
	v.kdf = argon2Params{Time: passes, Memory: memoryKiB, Threads: threads}
}

// DefaultArgon2Header is the slot header written with the production parameters.
var DefaultArgon2Header = defaultArgon2.String()

// DEKForTest returns the in-memory data key itself, not a copy, so a test can watch Lock zero it.
func DEKForTest(v *Vault) []byte {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if v.key == nil {
		return nil
	}
	return v.key.raw
}

// AddLegacyPRFSlotForTest stores a PRF slot of the first format ("hkdf-sha256": the PRF
// output's HKDF wraps the data key), as a vault made before the X25519 slots has.
func AddLegacyPRFSlotForTest(v *Vault, ctx context.Context, credentialID, prfInput, prfOutput []byte) error {
	dek := DEKForTest(v)
	salt := randomBytes(saltSizePRF)
	kek, err := prfKEK(prfOutput, salt, v.rpID, credentialID)
	if err != nil {
		return err
	}
	nonce, wrapped, err := seal(kek, dek, adWrapPRF+prfBinding(v.rpID, credentialID))
	if err != nil {
		return err
	}
	return v.store.PutPRFSlot(ctx, &Slot{
		Kind: SlotPRF, CredentialID: credentialID, PRFInput: prfInput, KDF: kdfHKDF,
		Salt: salt, Nonce: nonce, WrappedKey: wrapped, CreatedAt: v.now(),
	})
}

// NewLimiterForTest returns a limiter with its own backoff shape.
func NewLimiterForTest(now func() time.Time, free int, base, max time.Duration) *Limiter {
	return &Limiter{now: now, free: free, base: base, max: max}
}

// Failures returns the number of consecutive failures so far.
func (l *Limiter) Failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failures
}
