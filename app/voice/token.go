package voice

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// TokenStore keeps the hash of the voice webhook's bearer token.
type TokenStore interface {
	// VoiceTokenHash returns "" when no token was ever issued.
	VoiceTokenHash(ctx context.Context) (string, error)
	SetVoiceTokenHash(ctx context.Context, hash string) error
}

// Tokens checks and rotates the voice webhook token. Only its SHA-256 is stored: the token
// itself is shown once, at rotation.
type Tokens struct {
	store TokenStore
	mu    sync.RWMutex
	hash  []byte // nil: no token, every request is refused
}

// NewTokens loads the current token hash.
func NewTokens(ctx context.Context, store TokenStore) (*Tokens, error) {
	h, err := store.VoiceTokenHash(ctx)
	if err != nil {
		return nil, fmt.Errorf("load voice token: %w", err)
	}
	t := &Tokens{store: store}
	if h != "" {
		if t.hash, err = hex.DecodeString(h); err != nil {
			return nil, fmt.Errorf("stored voice token hash is corrupt: %w", err)
		}
	}
	return t, nil
}

// ErrNoToken means no voice token has been issued yet.
var ErrNoToken = errors.New("no voice token has been issued; run maven voice-token --rotate")

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

// Rotate issues a new 256-bit token, replacing the old one at once, and returns it. It is the
// only time the token exists outside the caller.
func (t *Tokens) Rotate(ctx context.Context) (string, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate voice token: %w", err)
	}
	token := "mvt_" + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	if err := t.store.SetVoiceTokenHash(ctx, hex.EncodeToString(sum[:])); err != nil {
		return "", fmt.Errorf("store voice token: %w", err)
	}
	t.mu.Lock()
	t.hash = sum[:]
	t.mu.Unlock()
	return token, nil
}
