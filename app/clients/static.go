package clients

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"maven/app/reveal"
)

// staticPrefix starts every static token, so a leaked one says what it opens (as the voice
// token's "mvn_voice_" does).
const staticPrefix = "mvn_client_"

// MaxNameLen bounds a static client's name, in characters.
const MaxNameLen = 64

// staticID is the id of the static client named name.
func staticID(name string) string { return "static:" + name }

// checkName refuses a static client's name that is empty, too long, or holds a character a
// person cannot see (docs/design.md#rule-25).
func checkName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case strings.TrimSpace(name) != name || n == 0:
		return fmt.Errorf("%w: a client's name is 1 to %d characters, without spaces around it", ErrInvalid, MaxNameLen)
	case n > MaxNameLen:
		return fmt.Errorf("%w: a client's name is at most %d characters", ErrInvalid, MaxNameLen)
	case reveal.Contains(name) || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return fmt.Errorf("%w: a client's name cannot hold invisible or control characters", ErrInvalid)
	}
	return nil
}

// AddStatic issues a static token for a client called name that sees choice's tools, and
// returns it: it is shown this once, and only its SHA-256 is kept (docs/design.md#rule-29). The
// CLI is the owner's, so this is an approval; it approves no call. ErrExists if an approved
// client has that name; ErrInvalid for a bad name.
func (s *Service) AddStatic(ctx context.Context, name string, choice Choice) (string, Client, error) {
	if err := checkName(name); err != nil {
		return "", Client{}, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", Client{}, fmt.Errorf("generate a client token: %w", err)
	}
	token := staticPrefix + base64.RawURLEncoding.EncodeToString(raw)
	sum := sha256.Sum256([]byte(token))
	choice = choice.normal()
	now := s.now()
	c := Client{ID: staticID(name), Kind: KindStatic, State: StateApproved, Name: name, SecretHash: sum[:],
		AllTools: choice.All, ToolIDs: choice.ToolIDs, CreatedAt: now, ApprovedAt: now}
	if err := s.store.AddStatic(ctx, c); err != nil {
		return "", Client{}, err
	}
	s.cache.changed()
	s.mu.Lock()
	s.static[c.ID] = sum[:]
	s.mu.Unlock()
	s.record(ctx, "cli", ActionAdded, c, map[string]any{"tools": choice.record()})
	s.changed(c.ID)
	return token, c, nil
}

// staticClient returns the id of the approved static client whose token this is. Every stored
// hash is compared, each in constant time, so how long it takes says nothing about which
// matched, or how nearly.
func (s *Service) staticClient(token string) (string, bool) {
	sum := sha256.Sum256([]byte(token))
	s.mu.Lock()
	defer s.mu.Unlock()
	found := ""
	for id, h := range s.static {
		if subtle.ConstantTimeCompare(sum[:], h) == 1 {
			found = id
		}
	}
	return found, found != ""
}
