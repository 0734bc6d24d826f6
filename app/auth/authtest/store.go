package authtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"slices"
	"sync"
	"time"

	"maven/app/auth"
)

// Store is an auth.Store in memory, for tests that need a real auth.Service but not a database.
// Safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	owner    *auth.Owner
	passkeys []auth.Passkey
	nextID   int64
	links    map[[sha256.Size]byte]setupLink
	key      string // signs browser markers
}

type setupLink struct {
	expires time.Time
	used    bool
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{links: map[[sha256.Size]byte]setupLink{}} }

var _ auth.Store = (*Store)(nil)

// Owner implements auth.Store.
func (s *Store) Owner(context.Context) (auth.Owner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == nil {
		return auth.Owner{}, auth.ErrNoOwner
	}
	return *s.owner, nil
}

// EnsureOwner implements auth.Store.
func (s *Store) EnsureOwner(_ context.Context, o auth.Owner) (auth.Owner, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.owner == nil {
		s.owner = &o
	}
	return *s.owner, nil
}

// Passkeys implements auth.Store.
func (s *Store) Passkeys(context.Context) ([]auth.Passkey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.passkeys), nil
}

// Passkey implements auth.Store.
func (s *Store) Passkey(_ context.Context, id int64) (auth.Passkey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(id); i >= 0 {
		return s.passkeys[i], nil
	}
	return auth.Passkey{}, auth.ErrPasskeyNotFound
}

// InsertPasskey implements auth.Store.
func (s *Store) InsertPasskey(_ context.Context, p *auth.Passkey) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range s.passkeys {
		if bytes.Equal(q.CredentialID, p.CredentialID) {
			return auth.ErrDuplicatePasskey
		}
	}
	s.nextID++
	p.ID = s.nextID
	s.passkeys = append(s.passkeys, *p)
	return nil
}

// RecordAssertion implements auth.Store.
func (s *Store) RecordAssertion(_ context.Context, id int64, a auth.Assertion) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return auth.ErrPasskeyNotFound
	}
	p := &s.passkeys[i]
	p.SignCount, p.BackupState, p.UserVerified, p.LastUsedAt = a.SignCount, a.BackupState, a.UserVerified, a.At
	return nil
}

// RenamePasskey implements auth.Store.
func (s *Store) RenamePasskey(_ context.Context, id int64, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return auth.ErrPasskeyNotFound
	}
	s.passkeys[i].Name = name
	return nil
}

// DeletePasskey implements auth.Store.
func (s *Store) DeletePasskey(_ context.Context, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	switch {
	case i < 0:
		return auth.ErrPasskeyNotFound
	case len(s.passkeys) == 1:
		return auth.ErrLastPasskey
	}
	s.passkeys = slices.Delete(s.passkeys, i, i+1)
	return nil
}

// InsertSetupLink implements auth.Store.
func (s *Store) InsertSetupLink(_ context.Context, hash []byte, created, expires time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, l := range s.links {
		if !l.used && created.Before(l.expires) {
			l.expires = created
			s.links[k] = l
		}
	}
	s.links[[sha256.Size]byte(hash)] = setupLink{expires: expires}
	return nil
}

// SetupLinkUsable implements auth.Store.
func (s *Store) SetupLinkUsable(_ context.Context, hash []byte, now time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.links[[sha256.Size]byte(hash)]
	return ok && !l.used && now.Before(l.expires), nil
}

// UseSetupLink implements auth.Store.
func (s *Store) UseSetupLink(_ context.Context, hash []byte, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [sha256.Size]byte(hash)
	l, ok := s.links[key]
	if !ok || l.used || !now.Before(l.expires) {
		return auth.ErrSetupLinkInvalid
	}
	l.used = true
	s.links[key] = l
	return nil
}

func (s *Store) index(id int64) int {
	return slices.IndexFunc(s.passkeys, func(p auth.Passkey) bool { return p.ID == id })
}

// BrowserKey implements auth.Store.
func (s *Store) BrowserKey(_ context.Context, fresh string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key == "" {
		s.key = fresh
	}
	return s.key, nil
}
