// Package bearer issues and checks the daemon's bearer tokens (the voice webhook's, the metrics
// endpoint's). Only a token's SHA-256 is stored: the token itself is shown once, at rotation.
package bearer

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sync"
)

// Store keeps small named settings; db.SettingsStore implements it.
type Store interface {
	// Setting returns "" when the key was never set.
	Setting(ctx context.Context, key string) (string, error)
	SetSetting(ctx context.Context, key, value string) error
}

// Tokens checks and rotates one token.
type Tokens struct {
	store  Store
	key    string // settings key of the hash
	prefix string // shown at the start of tokens, so a leaked one says what it opens
	mu     sync.RWMutex
	hash   []byte // nil: no token issued, every check fails
}

// New loads the hash stored under name ("voice", "metrics").
func New(ctx context.Context, store Store, name string) (*Tokens, error) {
	t := &Tokens{store: store, key: name + "_token_sha256", prefix: "mvn_" + name + "_"}
	h, err := store.Setting(ctx, t.key)
	if err != nil {
		return nil, fmt.Errorf("load %s token: %w", name, err)
	}
	if h != "" {
		if t.hash, err = hex.DecodeString(h); err != nil || len(t.hash) != sha256.Size {
			return nil, fmt.Errorf("the stored %s token hash is corrupt", name)
		}
	}
	return t, nil
}

// Check reports whether token is the current one, in constant time.
func (t *Tokens) Check(token string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.hash == nil || token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], t.hash) == 1
}

// Rotate issues a new 256-bit token, replacing the old one at once, and returns it.
func (t *Tokens) Rotate(ctx context.Context) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	token := t.prefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	if err := t.store.SetSetting(ctx, t.key, hex.EncodeToString(sum[:])); err != nil {
		return "", fmt.Errorf("store token: %w", err)
	}
	t.mu.Lock()
	t.hash = sum[:]
	t.mu.Unlock()
	return token, nil
}
