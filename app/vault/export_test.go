package vault

import "time"

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
	return v.dek
}

// NewLimiterForTest returns a limiter with its own backoff shape.
func NewLimiterForTest(now func() time.Time, free int, base, max time.Duration) *Limiter {
	return &Limiter{now: now, free: free, base: base, max: max}
}
