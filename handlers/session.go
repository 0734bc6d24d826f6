package handlers

import (
	"context"
	"crypto/rand"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"
)

// Session limits. scs enforces both too, but RenewToken resets its absolute deadline and every
// request (the servers card polls) pushes its idle expiry, so Maven keeps its own record in the
// session and enforces it here.
const (
	SessionIdleTimeout = 30 * time.Minute
	SessionLifetime    = 12 * time.Hour
)

// Cookie names: "__Host-" (Secure, Path=/, no Domain) when served over TLS.
const (
	cookieName    = "maven_session"
	cookieNameTLS = "__Host-maven"
)

// Session keys.
const (
	keySID      = "sid"       // random id naming this session to the auth service
	keyPasskey  = "passkey"   // id of the passkey that signed in; absent when signed out
	keyAuthTime = "auth_time" // unix seconds of the sign-in
	keyDeadline = "deadline"  // unix seconds after which the sign-in is void, whatever happens
	keyLastSeen = "last_seen" // unix seconds of the last request the owner made (polls excluded)
	keyEpoch    = "epoch"     // the vault's epoch at sign-in; a lock since then voids the session
)

// NewSessionManager returns the scs session manager with Maven's settings over store (the
// sqlite3store on Maven's database in the daemon). tls says whether the daemon serves HTTPS.
func NewSessionManager(store scs.Store, tls bool) *scs.SessionManager {
	m := scs.New()
	m.Store = store
	m.IdleTimeout = SessionIdleTimeout
	m.Lifetime = SessionLifetime
	m.HashTokenInStore = true
	m.Cookie.Name = cookieName
	m.Cookie.HttpOnly = true
	m.Cookie.SameSite = http.SameSiteLaxMode
	m.Cookie.Path = "/"
	m.Cookie.Domain = ""
	m.Cookie.Persist = false // gone when the browser closes
	m.Cookie.Secure = tls
	if tls {
		m.Cookie.Name = cookieNameTLS
	}
	return m
}

// ctxKey types keep the handlers' context values apart.
type (
	sessionLoadedKey struct{}
	ownerKey         struct{}
	proofKey         struct{}
)

// owner is the signed-in owner of a request, as requireOwner found it.
type owner struct {
	sid     string
	passkey int64
}

func ownerFrom(ctx context.Context) owner {
	o, _ := ctx.Value(ownerKey{}).(owner)
	return o
}

// newSID returns a fresh random session id for the auth service.
func newSID() string { return rand.Text() + rand.Text() }

// sessionID returns the session's id for the auth service, creating one if needed.
func (s *server) sessionID(ctx context.Context) string {
	sid := s.sessions.GetString(ctx, keySID)
	if sid == "" {
		sid = newSID()
		s.sessions.Put(ctx, keySID, sid)
	}
	return sid
}

// signIn makes the session the owner's: a new token (the pre-sign-in cookie becomes useless), a
// new id (whatever the old one held is forgotten), and the sign-in time and deadline.
func (s *server) signIn(ctx context.Context, passkey int64) error {
	old := s.sessions.GetString(ctx, keySID)
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	if old != "" {
		s.auth.EndSession(old)
	}
	now := s.now()
	s.sessions.Put(ctx, keySID, newSID())
	s.sessions.Put(ctx, keyPasskey, passkey)
	s.sessions.Put(ctx, keyAuthTime, now.Unix())
	s.sessions.Put(ctx, keyDeadline, now.Add(SessionLifetime).Unix())
	s.sessions.Put(ctx, keyLastSeen, now.Unix())
	s.sessions.Put(ctx, keyEpoch, s.vault.Epoch())
	return nil
}

// endSession forgets what auth holds for the session (ceremonies, step-up grants) and destroys
// it in the store.
func (s *server) endSession(ctx context.Context) error {
	if sid := s.sessions.GetString(ctx, keySID); sid != "" {
		s.auth.EndSession(sid)
	}
	return s.sessions.Destroy(ctx)
}

// sessionState says whether the session is signed in and still within its limits.
type sessionState int

const (
	signedOut sessionState = iota
	signedInFresh
	signedInExpired
)

func (s *server) sessionState(ctx context.Context) sessionState {
	if ctx.Value(sessionLoadedKey{}) == nil || s.sessions.GetInt64(ctx, keyPasskey) == 0 {
		return signedOut
	}
	now := s.now().Unix()
	deadline := s.sessions.GetInt64(ctx, keyDeadline)
	last := s.sessions.GetInt64(ctx, keyLastSeen)
	if now >= deadline || now-last >= int64(SessionIdleTimeout/time.Second) {
		return signedInExpired
	}
	// Locking signs every session out, and so does a restart of a daemon with a vault.
	if s.sessions.GetString(ctx, keyEpoch) != s.vault.Epoch() {
		return signedInExpired
	}
	return signedInFresh
}

// signedIn reports whether r comes from a signed-in session within its limits. It does not
// check that the passkey still exists; requireOwner does.
func (s *server) signedIn(r *http.Request) bool {
	return s.sessionState(r.Context()) == signedInFresh
}
