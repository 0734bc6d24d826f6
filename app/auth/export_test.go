package auth

import "github.com/go-webauthn/webauthn/webauthn"

// PendingUnlockForTest returns the go-webauthn SessionData of the session's pending unlock
// ceremony, without consuming it, so a test can check what it holds.
func PendingUnlockForTest(s *Service, sid string) (webauthn.SessionData, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.pending[pendingKey{sid, kindUnlock}]
	return c.data, ok
}
