package auth

import (
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
)

// ceremonyKind says which ceremony a pending entry belongs to; a session has at most one of
// each kind in progress, and beginning another replaces it.
type ceremonyKind string

const (
	kindRegister ceremonyKind = "register"
	kindLogin    ceremonyKind = "login"
	kindStepUp   ceremonyKind = "step-up"
	kindUnlock   ceremonyKind = "unlock" // a PRF assertion that unlocks the vault
	kindEnroll   ceremonyKind = "enroll" // a PRF assertion that wraps the vault's key for a passkey
)

// registrationPurpose says why a registration was allowed to begin.
type registrationPurpose string

const (
	purposeSetup registrationPurpose = "setup" // a redeemed setup link
	purposeAdd   registrationPurpose = "add"   // a step-up by the signed-in owner
)

type pendingKey struct {
	sid  string
	kind ceremonyKind
}

// ceremony is a begun ceremony: the go-webauthn SessionData, never sent to the browser, and
// what the ceremony was begun for.
type ceremony struct {
	data     webauthn.SessionData
	expires  time.Time
	purpose  registrationPurpose // registrations only
	approval Approval            // step-ups only
	// prfInputs are the PRF inputs a PRF assertion asked for, by base64url credential ID. They
	// are not secret (the vault stores them in the clear), only needed again at finish.
	prfInputs map[string][]byte
}

// grant is what a verified step-up leaves behind for its session: permission for exactly one
// Approval until at+window.
type grant struct {
	approval Approval
	owner    string
	at       time.Time
}

// anonymous reports whether anyone who reaches the page can begin a ceremony like c (sign-in,
// unlock, a setup registration), as opposed to the signed-in owner only (step-up, enrolling a
// passkey in the vault, adding a passkey).
func (c ceremony) anonymous(kind ceremonyKind) bool {
	return kind == kindLogin || kind == kindUnlock || (kind == kindRegister && c.purpose == purposeSetup)
}

// putPending stores c for the session, replacing the session's ceremony of the same kind, so a
// session holds at most one ceremony of each kind. The ceremonies anyone can begin and those
// only the owner can begin are bounded apart (maxAnonymous, maxOwner): a flood of anonymous
// sign-ins or unlocks never touches the owner's step-up. When its share is full, expired
// ceremonies go first; then an anonymous ceremony is refused with ErrBusy rather than evicting
// one in progress (a phone's unlock survives any flood), and an owner's ceremony replaces the
// owner's own oldest.
func (s *Service) putPending(sid string, kind ceremonyKind, c ceremony) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := pendingKey{sid, kind}
	if _, ok := s.pending[key]; ok {
		s.pending[key] = c
		return nil
	}
	anonymous := c.anonymous(kind)
	limit := maxOwner
	if anonymous {
		limit = maxAnonymous
	}
	if s.countPending(anonymous) >= limit {
		now := s.now()
		for k, p := range s.pending {
			if now.After(p.expires) {
				delete(s.pending, k)
			}
		}
	}
	if s.countPending(anonymous) >= limit {
		if anonymous {
			return ErrBusy
		}
		var oldest pendingKey
		var first time.Time
		for k, p := range s.pending {
			if !p.anonymous(k.kind) && (first.IsZero() || p.expires.Before(first)) {
				oldest, first = k, p.expires
			}
		}
		delete(s.pending, oldest)
	}
	s.pending[key] = c
	return nil
}

// countPending counts the pending ceremonies of one share.
func (s *Service) countPending(anonymous bool) int {
	n := 0
	for k, p := range s.pending {
		if p.anonymous(k.kind) == anonymous {
			n++
		}
	}
	return n
}

// takePending removes and returns the session's ceremony of that kind: a ceremony is consumed
// by its first finish, whether that succeeds or fails, so a replay finds nothing.
func (s *Service) takePending(sid string, kind ceremonyKind) (ceremony, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := pendingKey{sid, kind}
	c, ok := s.pending[key]
	if !ok || sid == "" {
		return ceremony{}, ErrNoCeremony
	}
	delete(s.pending, key)
	if s.now().After(c.expires) {
		return ceremony{}, ErrCeremonyExpired
	}
	return c, nil
}

// addGrant records a verified step-up for the session, replacing an older grant for the same
// approval.
func (s *Service) addGrant(sid string, g grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.grants[sid][:0]
	for _, old := range s.grants[sid] {
		if !old.approval.Same(g.approval) {
			kept = append(kept, old)
		}
	}
	s.grants[sid] = append(kept, g)
}

// fresh reports whether g is still within the window at now. A grant from the future (the clock
// stepped back) is not fresh either.
func (s *Service) fresh(g grant, now time.Time) bool {
	return !now.Before(g.at) && now.Sub(g.at) < s.cfg.StepUpWindow
}

// Redeem spends the session's grant for exactly approval (the same action on the same items,
// each shown with the same digest) and returns the proof the action needs. It fails with
// ErrStepUpRequired if there is none, or it is older than the step-up window (measured from the
// assertion, never extended). A grant is spent once: the next action asks for the passkey
// again. Minting a StepUp happens here and nowhere else.
func (s *Service) Redeem(sid string, approval Approval) (StepUp, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	gs := s.grants[sid]
	for i, g := range gs {
		if !g.approval.Same(approval) {
			continue
		}
		s.grants[sid] = append(gs[:i:i], gs[i+1:]...)
		if len(s.grants[sid]) == 0 {
			delete(s.grants, sid)
		}
		if !s.fresh(g, now) {
			return StepUp{}, ErrStepUpRequired
		}
		return StepUp{approval: g.approval.canonical(), owner: g.owner}, nil
	}
	return StepUp{}, ErrStepUpRequired
}

// EndSession forgets everything held for a session: its ceremonies in progress, its step-up
// grants and its redeemed setup link. The web layer calls it on sign-out and whenever it
// replaces a session id.
func (s *Service) EndSession(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []ceremonyKind{kindRegister, kindLogin, kindStepUp, kindUnlock, kindEnroll} {
		delete(s.pending, pendingKey{sid, k})
	}
	delete(s.grants, sid)
	delete(s.setups, sid)
}

// ForgetStepUps drops every session's step-up grants. Locking the daemon calls it: a step-up
// never outlives a lock.
func (s *Service) ForgetStepUps() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.grants)
}
