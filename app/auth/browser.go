package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"
)

// A browser marker says "a passkey proved the owner in this browser before": a browser that
// carries one begins its sign-ins and unlocks on a budget of its own, not on its address's, which
// a stranger behind the same NAT can spend (docs/design.md#rule-23). It is an id and the time it
// was issued, signed with a key kept in the database, so it survives the restart after which the
// owner must unlock; it grants nothing else, and a forged or stale one is simply not a marker.
const (
	// BrowserMarkerLifetime is how long a marker stays good after it was issued (a sign-in
	// issues it again); browsers keep a cookie at most 400 days.
	BrowserMarkerLifetime = 400 * 24 * time.Hour
	markerIDLen           = 16
	markerMACLen          = 16
	markerLen             = markerIDLen + 8 + markerMACLen
)

// browserKey returns the key that signs browser markers, made and stored on first use.
func (s *Service) browserKey(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	key := s.markerKey
	s.mu.Unlock()
	if key != nil {
		return key, nil
	}
	stored, err := s.store.BrowserKey(ctx, rand.Text()+rand.Text())
	if err != nil {
		return nil, fmt.Errorf("browser marker key: %w", err)
	}
	key = []byte(stored)
	s.mu.Lock()
	s.markerKey = key
	s.mu.Unlock()
	return key, nil
}

// RememberBrowser returns the marker for a browser in which a passkey just proved the owner:
// old's id issued anew when old is a good marker (the browser keeps its budget), else a new id.
func (s *Service) RememberBrowser(ctx context.Context, old string) (string, error) {
	key, err := s.browserKey(ctx)
	if err != nil {
		return "", err
	}
	id, ok := s.markerID(key, old)
	if !ok {
		id = make([]byte, markerIDLen)
		_, _ = rand.Read(id) // crypto/rand.Read never fails
	}
	b := make([]byte, markerIDLen+8, markerLen)
	copy(b, id)
	binary.BigEndian.PutUint64(b[markerIDLen:], uint64(s.now().Unix()))
	return base64.RawURLEncoding.EncodeToString(append(b, markerMAC(key, b)...)), nil
}

// KnownBrowser returns the id of the browser marker names, and false for anything that is not a
// marker this database's key signed, or one older than BrowserMarkerLifetime.
func (s *Service) KnownBrowser(ctx context.Context, marker string) (string, bool) {
	if marker == "" {
		return "", false
	}
	key, err := s.browserKey(ctx)
	if err != nil {
		s.log.Error("auth: read the browser marker key", "err", err)
		return "", false
	}
	id, ok := s.markerID(key, marker)
	return string(id), ok
}

// markerID checks marker against key and its age, and returns its id.
func (s *Service) markerID(key []byte, marker string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(marker)
	if err != nil || len(b) != markerLen {
		return nil, false
	}
	body, mac := b[:markerIDLen+8], b[markerIDLen+8:]
	if !hmac.Equal(mac, markerMAC(key, body)) {
		return nil, false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(body[markerIDLen:])), 0)
	if age := s.now().Sub(issued); age < -time.Hour || age > BrowserMarkerLifetime {
		return nil, false
	}
	return body[:markerIDLen], true
}

func markerMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("maven browser marker\x00"))
	m.Write(body)
	return m.Sum(nil)[:markerMACLen]
}
