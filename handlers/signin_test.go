package handlers_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"maven/app/auth"
	"maven/app/auth/authtest"
)

func TestSetupLinkRegistersAndSignsIn(t *testing.T) {
	f := newFixture(t)
	token := f.setupToken()
	b := f.browser()

	page := b.get("/setup?token=" + token)
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), ">Register passkey</button>") {
		t.Fatalf("setup page: %d\n%s", page.Code, page.Body.String())
	}
	if r := b.get("/tools"); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/login" {
		t.Fatalf("/tools before setup: %d %q", r.Code, r.Header().Get("Location"))
	}
	before := b.cookies["maven_session"]

	a := authtest.New(testOrigin)
	var fin finishAnswer
	rec := b.register(token, a, "Laptop")
	if rec.Code != http.StatusOK {
		t.Fatalf("finish: %d %s", rec.Code, rec.Body.String())
	}
	_ = fin
	after := b.cookies["maven_session"]
	if after == nil || (before != nil && before.Value == after.Value) {
		t.Fatalf("session token not renewed on sign-in: before %v after %v", before, after)
	}
	if !after.HttpOnly || after.SameSite != http.SameSiteLaxMode || after.Path != "/" || after.Secure {
		t.Fatalf("cookie attributes: %+v", after)
	}
	if r := b.get("/tools"); r.Code != http.StatusOK {
		t.Fatalf("/tools after setup: %d", r.Code)
	}

	ps, err := f.auth.Passkeys(t.Context())
	if err != nil || len(ps) != 1 || ps[0].Name != "Laptop" || !ps[0].CanUnlock() {
		t.Fatalf("passkeys: %v %+v", err, ps)
	}
}

func TestSetupLinkIsSingleUse(t *testing.T) {
	f := newFixture(t)
	token := f.setupToken()
	mustOK(t, "first registration", f.browser().register(token, authtest.New(testOrigin), ""))

	other := f.browser()
	if r := other.get("/setup?token=" + token); r.Code != http.StatusGone || strings.Contains(r.Body.String(), "Register passkey") {
		t.Fatalf("used link page: %d", r.Code)
	}
	var ans beginAnswer
	if r := other.postJSON("/setup/begin", map[string]string{"token": token}, &ans); r.Code != http.StatusBadRequest || !strings.Contains(ans.Error, "setup link") {
		t.Fatalf("used link begin: %d %+v", r.Code, ans)
	}
}

func TestSetupLinkExpires(t *testing.T) {
	f := newFixture(t)
	token := f.setupToken()
	f.clock.Advance(15*time.Minute + time.Second)
	b := f.browser()
	if r := b.get("/setup?token=" + token); r.Code != http.StatusGone {
		t.Fatalf("expired link page: %d", r.Code)
	}
	if r := b.postJSON("/setup/begin", map[string]string{"token": token}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("expired link begin: %d %s", r.Code, r.Body.String())
	}
}

func TestSetupFinishWithoutBeginIsRefused(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	if r := b.postJSON("/setup/finish", map[string]any{"credential": map[string]string{}}, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("finish without begin: %d %s", r.Code, r.Body.String())
	}
}

func TestLoginWithPasskey(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	f.signUp(a)

	b := f.browser()
	if r := b.get("/login"); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), ">Sign in with passkey</button>") {
		t.Fatalf("login page: %d", r.Code)
	}
	var fin finishAnswer
	rec := b.login(a)
	if rec.Code != http.StatusOK {
		t.Fatalf("login: %d %s", rec.Code, rec.Body.String())
	}
	_ = fin
	if r := b.get("/tools"); r.Code != http.StatusOK {
		t.Fatalf("/tools after login: %d", r.Code)
	}
	ps, _ := f.auth.Passkeys(t.Context())
	if ps[0].SignCount != 1 || ps[0].LastUsedAt.IsZero() {
		t.Fatalf("sign count and last use not recorded: %+v", ps[0])
	}
}

func TestLoginRefusesWithoutUserVerification(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	f.signUp(a)
	a.UV = false
	b := f.browser()
	if r := b.login(a); r.Code != http.StatusBadRequest {
		t.Fatalf("login without UV: %d %s", r.Code, r.Body.String())
	}
	if r := b.get("/tools"); r.Code != http.StatusSeeOther {
		t.Fatalf("signed in without UV: %d", r.Code)
	}
}

func TestSignCountGoingBackwardsFails(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	f.signUp(a)
	mustOK(t, "login", f.browser().login(a)) // counter 1 stored
	mustOK(t, "login", f.browser().login(a)) // counter 2 stored

	a.Credentials()[0].Counter = 0 // a copy of the key that has signed once
	b := f.browser()
	if r := b.login(a); r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), "counter") {
		t.Fatalf("cloned login: %d %s", r.Code, r.Body.String())
	}
	if r := b.get("/tools"); r.Code != http.StatusSeeOther {
		t.Fatalf("signed in with a cloned passkey: %d", r.Code)
	}
	ps, _ := f.auth.Passkeys(t.Context())
	if ps[0].SignCount != 2 {
		t.Fatalf("counter overwritten by a refused assertion: %d", ps[0].SignCount)
	}
}

func TestBackupEligibilityChangeFails(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	f.signUp(a)
	a.BE = true
	if r := f.browser().login(a); r.Code != http.StatusBadRequest {
		t.Fatalf("BE flip: %d %s", r.Code, r.Body.String())
	}
}

func TestBackupStateIsStored(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	a.BE = true
	f.signUp(a)
	a.BS = true
	mustOK(t, "login", f.browser().login(a))
	ps, _ := f.auth.Passkeys(t.Context())
	if !ps[0].BackupEligible || !ps[0].BackupState {
		t.Fatalf("flags: %+v", ps[0])
	}
}

func TestLoginReplayIsRefused(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	f.signUp(a)
	b := f.browser()
	var begin beginAnswer
	mustOK(t, "begin", b.postJSON("/login/begin", map[string]string{}, &begin))
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"credential": jsonRaw(cred)}
	mustOK(t, "finish", b.postJSON("/login/finish", body, nil))
	if r := f.browser().postJSON("/login/finish", body, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("replay in another browser: %d", r.Code)
	}
	if r := b.postJSON("/login/finish", body, nil); r.Code != http.StatusBadRequest {
		t.Fatalf("replay in the same browser: %d", r.Code)
	}
}

func TestSessionIdleAndAbsoluteLimits(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)

	// Polling the servers card is not activity.
	f.clock.Advance(20 * time.Minute)
	if r := b.htmx(http.MethodGet, "/tools/servers", nil); r.Code != http.StatusOK {
		t.Fatalf("poll: %d", r.Code)
	}
	f.clock.Advance(11 * time.Minute)
	if r := b.get("/tools"); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/login" {
		t.Fatalf("after 31 idle minutes: %d", r.Code)
	}

	// Activity every 20 minutes does not extend past 12 hours.
	b = f.browser()
	mustOK(t, "login", b.login(a))
	for range 35 { // 11h40m
		f.clock.Advance(20 * time.Minute)
		if r := b.get("/tools"); r.Code != http.StatusOK {
			t.Fatalf("active session refused early: %d", r.Code)
		}
	}
	f.clock.Advance(20 * time.Minute)
	if r := b.htmx(http.MethodGet, "/tools", nil); r.Code != http.StatusUnauthorized || r.Header().Get("HX-Redirect") != "/login" {
		t.Fatalf("after 12 hours: %d %v", r.Code, r.Header())
	}
}

func TestLogoutEndsSession(t *testing.T) {
	f := newFixture(t)
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	if r := b.do(http.MethodPost, "/logout", nil, nil); r.Code != http.StatusSeeOther {
		t.Fatalf("logout: %d", r.Code)
	}
	if r := b.get("/tools"); r.Code != http.StatusSeeOther {
		t.Fatalf("/tools after logout: %d", r.Code)
	}
}

func TestSignedOutPagesRedirectToLogin(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	for _, p := range []string{"/", "/tools", "/passkeys", "/tools/servers", "/no-such-page"} {
		if r := b.get(p); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/login" {
			t.Errorf("GET %s signed out: %d %q", p, r.Code, r.Header().Get("Location"))
		}
	}
	for _, p := range []string{"/login", "/setup", "/healthz", "/static/maven.css"} {
		if r := b.get(p); r.Code >= 300 && r.Code < 400 {
			t.Errorf("GET %s signed out redirects: %d", p, r.Code)
		}
	}
	if r := b.postJSON("/step-up/begin", map[string]any{"action": "enable_tool", "id": 1}, nil); r.Code != http.StatusUnauthorized {
		t.Errorf("step-up begin signed out: %d", r.Code)
	}
}

// TestEverySessionEndsOnRestartLockAndPasskeyChange (docs/security.md#req-13): a restart — with no
// vault too — ends every session; so does a lock; so does a passkey added or removed, except
// for the session that made the change, which goes on under a new token.
func TestEverySessionEndsOnRestartLockAndPasskeyChange(t *testing.T) {
	signedIn := func(b *browser) bool { return b.get("/tools").Code == http.StatusOK }
	t.Run("restart without a vault", func(t *testing.T) {
		f := newFixture(t)
		a := authtest.New(testOrigin)
		b := f.signUp(a)
		f.boot()
		if signedIn(b) {
			t.Fatal("a session survived a restart of a daemon without a vault")
		}
		mustOK(t, "sign in again", b.login(a))
		if !signedIn(b) {
			t.Fatal("signing in again after the restart did not work")
		}
	})
	t.Run("lock", func(t *testing.T) {
		f := newVaultFixture(t, "")
		a := authtest.New(testOrigin)
		b, _ := f.setUp(a)
		other := f.browser()
		mustOK(t, "login", other.login(a))
		f.gate.Lock()
		if signedIn(b) || signedIn(other) {
			t.Fatal("a session survived a lock")
		}
	})
	for _, change := range []string{"added", "removed"} {
		t.Run("passkey "+change, func(t *testing.T) {
			f := newFixture(t)
			laptop, phone, spare := authtest.New(testOrigin), authtest.New(testOrigin), authtest.New(testOrigin)
			b := f.signUp(laptop)
			b.addPasskey(laptop, phone, "Phone")
			other := f.browser()
			mustOK(t, "login on the phone", other.login(phone))
			cookie := b.cookies["maven_session"].Value
			switch change {
			case "added":
				b.addPasskey(laptop, spare, "Spare")
			case "removed":
				b.addPasskey(laptop, spare, "Spare")
				mustOK(t, "login on the phone again", other.login(phone))
				cookie = b.cookies["maven_session"].Value
				b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 3, ""))
				mustOK(t, "remove the spare", b.htmx(http.MethodPost, "/passkeys/3/remove", url.Values{}))
			}
			if signedIn(other) {
				t.Fatalf("another session survived a passkey %s", change)
			}
			if !signedIn(b) || b.cookies["maven_session"].Value == cookie {
				t.Fatalf("the session that %s the passkey did not go on under a new token", change)
			}
		})
	}
}
