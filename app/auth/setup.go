package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"maven/app/activity"
)

// SetupLink is a one-time link that lets whoever opens it register a passkey for the owner.
type SetupLink struct {
	Token     string // 32 random bytes, base64url; only its hash is stored
	ExpiresAt time.Time
}

// NewSetupLink issues, for by ("cli", "system"), a setup token valid for the configured TTL (15
// minutes) and usable once; the activity feed records when and until when, never the token.
// It voids every earlier link: one not used yet stops working, and a session that used one and
// has not registered yet may no longer register. An owner who asks for a new link because the
// old one went astray leaves nothing of the old one behind.
func (s *Service) NewSetupLink(ctx context.Context, by string) (SetupLink, error) {
	token := rand.Text() + rand.Text() // 2 × 26 base32 characters, 260 bits
	now := s.now()
	link := SetupLink{Token: token, ExpiresAt: now.Add(s.cfg.SetupLinkTTL)}
	if err := s.store.InsertSetupLink(ctx, hashToken(token), now, link.ExpiresAt); err != nil {
		return SetupLink{}, fmt.Errorf("store setup link: %w", err)
	}
	s.mu.Lock()
	clear(s.setups)
	s.mu.Unlock()
	s.recordEvent(ctx, by, activity.ActionSetupLinkIssued, map[string]any{"expires": link.ExpiresAt.UTC().Format(time.RFC3339)})
	return link, nil
}

// SetupURL returns the full URL of a setup link on the first configured origin.
func (s *Service) SetupURL(link SetupLink) string {
	return s.cfg.Origins[0] + "/setup?token=" + link.Token
}

// CheckSetupToken reports, without using it, whether token is an unused, unexpired setup link;
// ErrSetupLinkInvalid otherwise. The setup page calls it to say whether it can go ahead.
func (s *Service) CheckSetupToken(ctx context.Context, token string) error {
	if token == "" {
		return ErrSetupLinkInvalid
	}
	ok, err := s.store.SetupLinkUsable(ctx, hashToken(token), s.now())
	if err != nil {
		return fmt.Errorf("check setup link: %w", err)
	}
	if !ok {
		return ErrSetupLinkInvalid
	}
	return nil
}

// redeemSetup lets the session register: it uses token (once, for good), or relies on a token
// the same session redeemed earlier whose time has not run out, so a registration that failed in
// the browser can be tried again without a new link.
func (s *Service) redeemSetup(ctx context.Context, sid, token string) error {
	s.mu.Lock()
	until, ok := s.setups[sid]
	s.mu.Unlock()
	now := s.now()
	if ok && now.Before(until) {
		return nil
	}
	if token == "" {
		return ErrSetupLinkInvalid
	}
	if err := s.store.UseSetupLink(ctx, hashToken(token), now); err != nil {
		return err
	}
	s.mu.Lock()
	s.setups[sid] = now.Add(s.cfg.SetupLinkTTL)
	s.mu.Unlock()
	return nil
}

// setupAllowed reports whether the session holds a redeemed setup link still in time.
func (s *Service) setupAllowed(sid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	until, ok := s.setups[sid]
	return ok && s.now().Before(until)
}

func (s *Service) endSetup(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.setups, sid)
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// randomHandle returns a new 32-byte WebAuthn user handle.
func randomHandle() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// credentialLabel is the base64url form of a credential id, for logs.
func credentialLabel(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }
