package handlers

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"

	"maven/app/auth"
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
	// The ceremony cookie names the sign-in, unlock or setup a browser has begun (see
	// ceremonyID).
	ceremonyCookieName    = "maven_ceremony"
	ceremonyCookieNameTLS = "__Host-maven-ceremony"
	// The browser marker says a passkey proved the owner in this browser before (see
	// limitCeremonies); it outlives sessions and restarts.
	browserCookieName    = "maven_browser"
	browserCookieNameTLS = "__Host-maven-browser"
)

// Session keys.
const (
	keySID      = "sid"       // random id naming this session to the auth service
	keyPasskey  = "passkey"   // id of the passkey that signed in; absent when signed out
	keyAuthTime = "auth_time" // unix seconds of the sign-in
	keyDeadline = "deadline"  // unix seconds after which the sign-in is void, whatever happens
	keyLastSeen = "last_seen" // unix seconds of the last request the owner made (polls excluded)
	keyEpoch    = "epoch"     // the epoch at sign-in (see epoch); a session of another is void
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

// newSID returns a fresh random session id for the auth service: sidLen characters of
// base32Alphabet.
func newSID() string { return rand.Text() + rand.Text() }

// sidLen is the length of newSID's ids (rand.Text gives 26 characters).
const sidLen = 2 * 26

// ceremonyID returns the id naming to auth the ceremonies anyone can begin (sign-in, unlock,
// setup), setting a new random one in the browser's ceremony cookie when it has none. It is not
// the session: nothing is written to the session store until a passkey has proved the owner, so
// anonymous requests store nothing in the database, and what they hold in memory auth bounds.
func (s *server) ceremonyID(w http.ResponseWriter, r *http.Request) string {
	if id := ceremonyIDOf(r); id != "" {
		return id
	}
	id := newSID()
	http.SetCookie(w, s.ceremonyCookie(id, 0))
	return id
}

// ceremonyIDOf reads the browser's ceremony id; "" when it has none (auth then finds no
// ceremony) or the cookie is not one Maven set.
func ceremonyIDOf(r *http.Request) string {
	for _, name := range []string{ceremonyCookieNameTLS, ceremonyCookieName} {
		if c, err := r.Cookie(name); err == nil && len(c.Value) == sidLen && strings.Trim(c.Value, base32Alphabet) == "" {
			return c.Value
		}
	}
	return ""
}

// base32Alphabet is the alphabet of rand.Text, which newSID uses.
const base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// endCeremonies forgets the browser's anonymous ceremonies once a passkey signed it in: auth
// drops what it held for the id, and the cookie is cleared.
func (s *server) endCeremonies(w http.ResponseWriter, r *http.Request) {
	if id := ceremonyIDOf(r); id != "" {
		s.auth.EndSession(id)
		http.SetCookie(w, s.ceremonyCookie("", -1))
	}
}

// ceremonyCookie is the ceremony cookie holding id, with the session cookie's attributes; it
// lasts as long as the browser session (maxAge 0) or is deleted (maxAge -1).
func (s *server) ceremonyCookie(id string, maxAge int) *http.Cookie {
	c := &http.Cookie{Name: ceremonyCookieName, Value: id, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.sessions.Cookie.Secure}
	if c.Secure {
		c.Name = ceremonyCookieNameTLS
	}
	return c
}

// browserMarkerOf reads the browser's marker; "" when it has none.
func browserMarkerOf(r *http.Request) string {
	for _, name := range []string{browserCookieNameTLS, browserCookieName} {
		if c, err := r.Cookie(name); err == nil {
			return c.Value
		}
	}
	return ""
}

// rememberBrowser gives the browser a marker, issued anew, now that a passkey proved the owner
// in it. Without one the browser only shares its address's budget, so a failure is logged, not
// the sign-in's.
func (s *server) rememberBrowser(w http.ResponseWriter, r *http.Request) {
	marker, err := s.auth.RememberBrowser(r.Context(), browserMarkerOf(r))
	if err != nil {
		s.log.Error("remember the browser", "err", err)
		return
	}
	c := &http.Cookie{Name: browserCookieName, Value: marker, Path: "/", MaxAge: int(auth.BrowserMarkerLifetime / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.sessions.Cookie.Secure}
	if c.Secure {
		c.Name = browserCookieNameTLS
	}
	http.SetCookie(w, c)
}

// signIn makes the session the owner's after a passkey proved them: a new token (the
// pre-sign-in cookie becomes useless), a new id (whatever an old one held is forgotten), the
// sign-in time and deadline, and the epoch it belongs to. The browser's anonymous ceremonies
// end, and it is remembered as the owner's.
func (s *server) signIn(w http.ResponseWriter, r *http.Request, passkey int64) error {
	ctx := r.Context()
	old := s.sessions.GetString(ctx, keySID)
	if err := s.sessions.RenewToken(ctx); err != nil {
		return err
	}
	if old != "" {
		s.auth.EndSession(old)
	}
	s.endCeremonies(w, r)
	s.rememberBrowser(w, r)
	now := s.now()
	s.sessions.Put(ctx, keySID, newSID())
	s.sessions.Put(ctx, keyPasskey, passkey)
	s.sessions.Put(ctx, keyAuthTime, now.Unix())
	s.sessions.Put(ctx, keyDeadline, now.Add(SessionLifetime).Unix())
	s.sessions.Put(ctx, keyLastSeen, now.Unix())
	s.sessions.Put(ctx, keyEpoch, s.epoch())
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

// epoch names the era a session belongs to: it changes at every start of the daemon, every lock,
// and every passkey added or removed (auth's and the vault's epochs), and each change ends every
// session signed in before it (docs/design.md#rule-23). The session that made a change to the
// passkeys is signed in again under the new epoch (reissue).
func (s *server) epoch() string { return s.auth.Epoch() + "/" + s.vault.Epoch() }

// reissue carries the signed-in session over into the current epoch after it changed the
// passkeys itself: a fresh token and id, like a sign-in by the same passkey.
func (s *server) reissue(w http.ResponseWriter, r *http.Request) error {
	return s.signIn(w, r, ownerFrom(r.Context()).passkey)
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
	if s.sessions.GetString(ctx, keyEpoch) != s.epoch() {
		return signedInExpired
	}
	return signedInFresh
}

// signedIn reports whether r comes from a signed-in session within its limits. It does not
// check that the passkey still exists; requireOwner does.
func (s *server) signedIn(r *http.Request) bool {
	return s.sessionState(r.Context()) == signedInFresh
}
