package handlers_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"maven/app/auth"
	"maven/app/auth/authtest"
	"maven/app/vault"
	"maven/handlers"
)

// enrollAnswer is what /passkeys/enroll/finish answers.
type enrollAnswer struct {
	OK           bool   `json:"ok"`
	ID           int64  `json:"id"`
	RecoveryCode string `json:"recovery_code"`
	Error        string `json:"error"`
}

// unlockAnswer is what /unlock/finish answers.
type unlockAnswer struct {
	OK       bool   `json:"ok"`
	NoPRF    bool   `json:"no_prf"`
	SignedIn bool   `json:"signed_in"`
	Redirect string `json:"redirect"`
	Error    string `json:"error"`
}

// enroll runs the PRF assertion maven.js runs after registering passkey id.
func (b *browser) enroll(a *authtest.Authenticator, id int64) (*httptest.ResponseRecorder, enrollAnswer) {
	t := b.f.t
	t.Helper()
	var begin beginAnswer
	mustOK(t, "enroll begin", b.postJSON("/passkeys/"+itoa(id)+"/enroll/begin", map[string]any{}, &begin))
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	var ans enrollAnswer
	rec := b.postJSON("/passkeys/enroll/finish", map[string]any{"credential": json.RawMessage(cred)}, &ans)
	return rec, ans
}

// setUp registers a's passkey through a setup link and enrolls it as maven.js does, which
// creates the vault; it returns the signed-in browser and the recovery code shown once.
func (vf *vaultFixture) setUp(a *authtest.Authenticator) (*browser, string) {
	t := vf.t
	t.Helper()
	b := vf.browser()
	var fin struct {
		ID  int64 `json:"id"`
		PRF bool  `json:"prf"`
	}
	rec := b.register(vf.setupToken(), a, "Phone")
	mustOK(t, "setup finish", rec)
	if err := json.Unmarshal(rec.Body.Bytes(), &fin); err != nil || !fin.PRF || fin.ID == 0 {
		t.Fatalf("setup finish %s: %v", rec.Body.String(), err)
	}
	rec, ans := b.enroll(a, fin.ID)
	mustOK(t, "enroll finish", rec)
	if !ans.OK || ans.RecoveryCode == "" {
		t.Fatalf("enroll: %+v", ans)
	}
	return b, ans.RecoveryCode
}

// unlockWith runs /unlock/begin, lets a answer, passes the answer through edit (nil leaves it
// as it is), and posts it to /unlock/finish.
func (b *browser) unlockWith(a *authtest.Authenticator, edit func([]byte) []byte) (*httptest.ResponseRecorder, unlockAnswer) {
	t := b.f.t
	t.Helper()
	var begin beginAnswer
	mustOK(t, "unlock begin", b.postJSON("/unlock/begin", map[string]any{}, &begin))
	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		cred = edit(cred)
	}
	var ans unlockAnswer
	rec := b.postJSON("/unlock/finish", map[string]any{"credential": json.RawMessage(cred)}, &ans)
	return rec, ans
}

// recovery posts the recovery code form as the browser does.
func (b *browser) recovery(code string) *httptest.ResponseRecorder {
	return b.do(http.MethodPost, "/unlock/recovery", strings.NewReader(url.Values{"code": {code}}.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

func (vf *vaultFixture) healthz() string {
	rec := httptest.NewRecorder()
	vf.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	return strings.TrimSpace(rec.Body.String())
}

const (
	healthLocked   = `{"status":"ok","locked":true}`
	healthUnlocked = `{"status":"ok","locked":false}`
)

func wantRedirect(t *testing.T, what string, rec *httptest.ResponseRecorder, to string) {
	t.Helper()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != to {
		t.Fatalf("%s: %d to %q, want 303 to %q", what, rec.Code, rec.Header().Get("Location"), to)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestSetupCreatesTheVaultAndShowsTheRecoveryCodeOnce(t *testing.T) {
	vf := newVaultFixture(t, "")
	if vf.healthz() != healthUnlocked || vf.gate.HasVault() {
		t.Fatalf("a fresh daemon: %s, vault %v", vf.healthz(), vf.gate.HasVault())
	}
	a := authtest.New(testOrigin)
	b, code := vf.setUp(a)
	if len(code) != 34 || strings.Count(code, "-") != 6 {
		t.Fatalf("recovery code %q", code)
	}
	if !vf.gate.HasVault() || vf.gate.Locked() || vf.healthz() != healthUnlocked {
		t.Fatalf("after setup: vault %v locked %v", vf.gate.HasVault(), vf.gate.Locked())
	}
	body := b.get("/passkeys").Body.String()
	if !strings.Contains(body, ">can unlock<") || strings.Contains(body, "Let it unlock") {
		t.Fatalf("passkeys page after enrollment:\n%s", body)
	}
	// Enrolling again wraps the key again, but the vault exists: no new code.
	_, again := b.enroll(a, 1)
	if !again.OK || again.RecoveryCode != "" {
		t.Fatalf("second enrollment: %+v", again)
	}
	if strings.Contains(vf.logs.String(), code) {
		t.Fatal("the recovery code reached the log")
	}
}

func TestRestartWithAVaultBootsLockedAndPagesGoToUnlock(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	old, _ := vf.setUp(a)
	vf.boot()
	if vf.healthz() != healthLocked || !vf.gate.Locked() {
		t.Fatalf("after restart: %s", vf.healthz())
	}
	for _, b := range []*browser{old, vf.browser()} {
		for _, path := range []string{"/", "/tools", "/passkeys", "/secrets", "/login", "/no-such-page"} {
			wantRedirect(t, "GET "+path, b.get(path), "/unlock")
		}
		if r := b.htmx(http.MethodPost, "/tools/1/disable", url.Values{}); r.Code != http.StatusLocked || r.Header().Get("HX-Redirect") != "/unlock" {
			t.Fatalf("htmx while locked: %d %q", r.Code, r.Header().Get("HX-Redirect"))
		}
		var ans map[string]string
		if r := b.postJSON("/step-up/begin", map[string]any{"action": "enable_tool", "id": 1}, &ans); r.Code != http.StatusLocked || ans["redirect"] != "/unlock" {
			t.Fatalf("JSON while locked: %d %v", r.Code, ans)
		}
		if r := b.postJSON("/login/begin", map[string]any{}, nil); r.Code != http.StatusLocked {
			t.Fatalf("sign-in while locked: %d", r.Code)
		}
	}
	page := vf.browser().get("/unlock")
	if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), ">Unlock with passkey</button>") ||
		!strings.Contains(page.Body.String(), `action="/unlock/recovery"`) {
		t.Fatalf("/unlock: %d\n%s", page.Code, page.Body.String())
	}
	if r := vf.browser().get("/static/" + "maven.css"); r.Code == http.StatusSeeOther {
		t.Fatal("static assets redirect while locked")
	}
	// A setup link still works while locked: it is how a lost passkey is replaced.
	if r := vf.browser().get("/setup?token=" + vf.setupToken()); r.Code != http.StatusOK {
		t.Fatalf("setup page while locked: %d", r.Code)
	}
}

func TestUnlockWithPasskeySignsInAndUnlocks(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	old, _ := vf.setUp(a)
	if err := vf.gate.SetSecret(t.Context(), "tok", []byte("s3cret")); err != nil {
		t.Fatal(err)
	}
	vf.boot()
	b := vf.browser()
	b.get("/unlock")
	before := b.cookies["maven_session"]
	rec, ans := b.unlockWith(a, nil)
	if rec.Code != http.StatusOK || !ans.OK || ans.Redirect != "/tools" {
		t.Fatalf("unlock: %d %s", rec.Code, rec.Body.String())
	}
	if vf.healthz() != healthUnlocked {
		t.Fatalf("after unlock: %s", vf.healthz())
	}
	if after := b.cookies["maven_session"]; after == nil || before != nil && after.Value == before.Value {
		t.Fatal("the session token was not renewed on unlock")
	}
	if r := b.get("/tools"); r.Code != http.StatusOK {
		t.Fatalf("/tools after unlock: %d", r.Code)
	}
	if names, err := vf.gate.SecretNames(t.Context()); err != nil || len(names) != 1 {
		t.Fatalf("secrets after unlock: %v %v", names, err)
	}
	// The session from before the restart stays signed out: a restart of a daemon with a
	// vault ends every session.
	wantRedirect(t, "old session", old.get("/tools"), "/login")
	if strings.Contains(vf.logs.String(), "s3cret") {
		t.Fatal("a secret reached the log")
	}
	if !strings.Contains(vf.logs.String(), `msg="unlock attempt" method=passkey outcome=unlocked credential=`+base64.RawURLEncoding.EncodeToString(a.Credentials()[0].ID)) {
		t.Fatalf("the unlock attempt was not logged with outcome and credential:\n%s", vf.logs.String())
	}
	// Unlocking again is refused plainly.
	if r := b.postJSON("/unlock/begin", map[string]any{}, nil); r.Code != http.StatusConflict {
		t.Fatalf("unlock begin while unlocked: %d", r.Code)
	}
}

func TestForgedPRFOutputFailsLikeEveryOtherFailure(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	vf.setUp(a)
	vf.boot()
	cred := a.Credentials()[0]

	forged := randomBytes(32)
	otherInput := cred.PRF(randomBytes(32)) // the PRF of the right credential over the wrong input
	cases := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"random PRF output, valid signature", func(c []byte) []byte { return must(authtest.ForgePRF(c, forged)) }},
		{"PRF output for another input, valid signature", func(c []byte) []byte { return must(authtest.ForgePRF(c, otherInput)) }},
		{"genuine PRF output, bogus signature", func(c []byte) []byte { return bogusSignature(t, c) }},
	}
	var first string
	for _, c := range cases {
		b := vf.browser()
		rec, ans := b.unlockWith(a, c.edit)
		got := rec.Result().Status + " " + rec.Body.String()
		if rec.Code != http.StatusBadRequest || ans.OK || ans.Error == "" {
			t.Fatalf("%s: %s", c.name, got)
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("%s answered %s; the first failure answered %s", c.name, got, first)
		}
		if vf.healthz() != healthLocked {
			t.Fatalf("%s unlocked the daemon", c.name)
		}
		wantRedirect(t, c.name+": /tools", b.get("/tools"), "/unlock")
	}
	logs := vf.logs.String()
	for _, secret := range [][]byte{forged, otherInput} {
		for _, enc := range []string{base64.RawURLEncoding.EncodeToString(secret), base64.StdEncoding.EncodeToString(secret)} {
			if strings.Contains(logs, enc) {
				t.Fatal("a PRF output reached the log")
			}
		}
	}
	if strings.Count(logs, `msg="unlock attempt" method=passkey outcome=failed`) != 3 {
		t.Fatalf("failed attempts not logged:\n%s", logs)
	}
	// Two PRF failures are within the free attempts: the genuine answer still unlocks.
	if rec, ans := vf.browser().unlockWith(a, nil); rec.Code != http.StatusOK || !ans.OK {
		t.Fatalf("genuine unlock after the forgeries: %s", rec.Body.String())
	}
}

// bogusSignature flips a bit of the assertion's signature.
func bogusSignature(t *testing.T, cred []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(cred, &m); err != nil {
		t.Fatal(err)
	}
	resp := m["response"].(map[string]any)
	sig, err := base64.RawURLEncoding.DecodeString(resp["signature"].(string))
	if err != nil {
		t.Fatal(err)
	}
	sig[len(sig)-3] ^= 1
	resp["signature"] = base64.RawURLEncoding.EncodeToString(sig)
	return must(json.Marshal(m))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestUnlockPageExplainsPRFOnlyWhenItMatters: when every registered passkey can do PRF, the
// locked /unlock page does not explain which passkeys can unlock; it is there to unlock.
func TestUnlockPageExplainsPRFOnlyWhenItMatters(t *testing.T) {
	vf := newVaultFixture(t, "")
	vf.setUp(authtest.New(testOrigin))
	vf.boot()
	page := vf.browser().get("/unlock").Body.String()
	if !strings.Contains(page, "Unlock with passkey") || strings.Contains(page, "a passkey must support the “PRF” extension") {
		t.Fatalf("/unlock with only PRF passkeys:\n%s", page)
	}
}

func TestPasskeyWithoutPRFSignsInButCannotUnlock(t *testing.T) {
	vf := newVaultFixture(t, "")
	laptop := authtest.New(testOrigin)
	b, _ := vf.setUp(laptop)
	phone := authtest.New(testOrigin)
	phone.PRF = nil // answers nothing to the PRF probe, and evaluates no PRF
	b.addPasskey(laptop, phone, "Old phone")
	vf.boot()

	nb := vf.browser()
	rec, ans := nb.unlockWith(phone, nil)
	if rec.Code != http.StatusOK || ans.OK || !ans.NoPRF || !ans.SignedIn || !strings.Contains(ans.Error, "can sign you in, but it cannot unlock") {
		t.Fatalf("unlock with a passkey without PRF: %d %s", rec.Code, rec.Body.String())
	}
	if vf.healthz() != healthLocked {
		t.Fatal("a passkey without PRF unlocked the daemon")
	}
	wantRedirect(t, "/tools", nb.get("/tools"), "/unlock")
	page := nb.get("/unlock").Body.String()
	if !strings.Contains(page, "can sign you in, but it cannot") || !strings.Contains(page, "Use the recovery code") {
		t.Fatalf("/unlock does not say it plainly:\n%s", page)
	}
	// A registered passkey lacks PRF: the page says which passkeys can unlock.
	if !strings.Contains(page, "a passkey must support the “PRF” extension") {
		t.Fatal("/unlock does not say which passkeys can unlock, with one registered that cannot")
	}
	if !strings.Contains(vf.logs.String(), "outcome=no_slot") {
		t.Fatal("the attempt was not logged")
	}
}

func TestRecoveryCodeUnlocksAndIsRateLimitedPerSource(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	_, code := vf.setUp(a)
	vf.boot()
	stranger := vf.browser()

	if r := stranger.recovery("not a code"); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "typo") {
		t.Fatalf("malformed code: %d", r.Code)
	}
	wrong := vaultCodeLike(t, vf)
	// The source's burst is tried; then it waits, and even the right code from it is not tried.
	for i := range handlers.RecoveryBurst - 1 {
		r := stranger.recovery(wrong)
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), "did not unlock") {
			t.Fatalf("wrong code %d: %d", i, r.Code)
		}
	}
	for _, c := range []string{wrong, code} {
		r := stranger.recovery(c)
		if r.Code != http.StatusTooManyRequests || r.Header().Get("Retry-After") == "" || !strings.Contains(r.Body.String(), "Try again in") {
			t.Fatalf("beyond the source's budget: %d %q", r.Code, r.Header().Get("Retry-After"))
		}
	}
	if vf.healthz() != healthLocked {
		t.Fatal("a refused attempt unlocked")
	}
	if strings.Contains(vf.logs.String(), wrong) || strings.Contains(vf.logs.String(), code) {
		t.Fatal("a recovery code reached the log")
	}
	if n := strings.Count(vf.logs.String(), `method="recovery code"`); n < handlers.RecoveryBurst+2 {
		t.Fatalf("%d recovery attempts logged", n)
	}

	// The owner, from another address, once the shared budget has refilled, unlocks; the
	// code signs nobody in.
	vf.clock.Advance(handlers.RecoveryTotalEvery)
	owner := vf.browser()
	wantRedirect(t, "right code", owner.recovery(strings.ToLower(code)), "/login?why=recovered")
	if vf.healthz() != healthUnlocked {
		t.Fatal("the recovery code did not unlock")
	}
	// Signed in, the owner is led to replace the used code.
	mustOK(t, "login", owner.login(a))
	if body := owner.get("/tools").Body.String(); !strings.Contains(body, "The recovery code was used") {
		t.Fatal("no warning that the recovery code was used")
	}
}

// TestStrangersCannotHoldTheRecoveryCodeBack: anyone who reaches /unlock/recovery guesses
// codes, one every 2 s from a new address each time, well past the point where the old shared
// back-off held every attempt for 5 minutes. The owner's right code, from their own address,
// still unlocks at once. A burst from many addresses at one instant runs only the shared
// budget's worth of Argon2id.
func TestStrangersCannotHoldTheRecoveryCodeBack(t *testing.T) {
	vf := newVaultFixture(t, "")
	_, code := vf.setUp(authtest.New(testOrigin))
	vf.boot()
	wrong := vaultCodeLike(t, vf)
	const guesses = 15 // the old back-off reached its 5-minute ceiling at 12
	for i := range guesses {
		vf.clock.Advance(handlers.RecoveryTotalEvery)
		if r := vf.browser().recovery(wrong); r.Code != http.StatusBadRequest {
			t.Fatalf("guess %d from a new address: %d, want it tried and failed", i, r.Code)
		}
	}
	vf.clock.Advance(handlers.RecoveryTotalEvery)
	wantRedirect(t, "the owner's code after the guesses", vf.browser().recovery(code), "/login?why=recovered")
	if vf.healthz() != healthUnlocked {
		t.Fatal("the owner's code did not unlock")
	}

	// Locked again, a burst of guesses from 30 addresses at one instant: only the shared
	// budget's burst is tried, the rest are told when to come back.
	vf.gate.Lock()
	vf.clock.Advance(time.Duration(handlers.RecoveryTotalBurst) * handlers.RecoveryTotalEvery)
	tried, refused := 0, 0
	for range 30 {
		switch r := vf.browser().recovery(wrong); r.Code {
		case http.StatusBadRequest:
			tried++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Fatalf("a guess in the burst: %d", r.Code)
		}
	}
	t.Logf("30 simultaneous guesses from 30 addresses: %d ran Argon2id, %d refused", tried, refused)
	if tried != handlers.RecoveryTotalBurst {
		t.Fatalf("%d of 30 simultaneous guesses ran Argon2id, want the shared burst of %d", tried, handlers.RecoveryTotalBurst)
	}
}

// vaultCodeLike returns a well-formed recovery code that is not the vault's: another vault's.
func vaultCodeLike(t *testing.T, vf *vaultFixture) string {
	t.Helper()
	other := newVaultFixture(t, "")
	_, code := other.setUp(authtest.New(testOrigin))
	return code
}

func TestLockLocksSignsOutAndSealsTheSecrets(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	if err := vf.gate.SetSecret(t.Context(), "tok", []byte("v4lue-zz9")); err != nil {
		t.Fatal(err)
	}
	if body := b.get("/tools").Body.String(); !strings.Contains(body, `action="/lock"`) {
		t.Fatal("no Lock button while unlocked")
	}
	wantRedirect(t, "lock", b.do(http.MethodPost, "/lock", nil, nil), "/unlock")
	if vf.healthz() != healthLocked {
		t.Fatal("Lock did not lock")
	}
	if _, err := vf.gate.SecretNames(t.Context()); err != vault.ErrLocked {
		t.Fatalf("secret names while locked: %v", err)
	}
	if err := vf.gate.SetSecret(t.Context(), "tok", []byte("x")); err == nil {
		t.Fatal("a secret was set while locked")
	}
	wantRedirect(t, "/tools after lock", b.get("/tools"), "/unlock")
	// A lock signs every session out: even after the next unlock, this one is void.
	other := vf.browser()
	if rec, ans := other.unlockWith(a, nil); !ans.OK {
		t.Fatalf("unlock: %s", rec.Body.String())
	}
	wantRedirect(t, "old session after the next unlock", b.get("/tools"), "/login")
	if r := other.get("/secrets"); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `data-secret="tok"`) || strings.Contains(r.Body.String(), "v4lue-zz9") {
		t.Fatalf("/secrets after unlock: %d", r.Code)
	}
}

func TestSecretsAreSetBehindStepUpAndOnlyWhileUnlocked(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	b, _ := vf.setUp(a)
	form := url.Values{"name": {"vikunja_token"}, "value": {"tk-9f8e7d"}}
	r := b.htmx(http.MethodPost, "/secrets", form)
	if r.Code != http.StatusForbidden {
		t.Fatalf("set without step-up: %d", r.Code)
	}
	if names, _ := vf.gate.SecretNames(t.Context()); len(names) != 0 {
		t.Fatalf("set without step-up stored %v", names)
	}
	// A grant to set another secret does not set this one.
	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "other"))
	if r := b.htmx(http.MethodPost, "/secrets", form); r.Code != http.StatusForbidden {
		t.Fatalf("a step-up for another secret set this one: %d", r.Code)
	}
	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "vikunja_token"))
	r = b.htmx(http.MethodPost, "/secrets", form)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `data-secret="vikunja_token"`) || strings.Contains(r.Body.String(), "tk-9f8e7d") {
		t.Fatalf("set: %d\n%s", r.Code, r.Body.String())
	}
	page := b.get("/secrets").Body.String()
	if !strings.Contains(page, "vikunja_token") || strings.Contains(page, "tk-9f8e7d") {
		t.Fatal("the secrets page shows a value, or not the name")
	}
	if strings.Contains(vf.logs.String(), "tk-9f8e7d") {
		t.Fatal("a secret value reached the log")
	}
	// Invalid names are refused with a message.
	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "no spaces"))
	if r := b.htmx(http.MethodPost, "/secrets", url.Values{"name": {"no spaces"}, "value": {"x"}}); r.Code != http.StatusUnprocessableEntity {
		t.Fatalf("bad name: %d", r.Code)
	}
	// Delete needs a step-up for that very name: it stops the servers that use the secret.
	del := url.Values{"name": {"vikunja_token"}}
	r = b.htmx(http.MethodPost, "/secrets/delete", del)
	if r.Code != http.StatusForbidden || !stepUpTrigger(t, r.Header()).Same(auth.One(auth.ActionDeleteSecret, 0, "vikunja_token")) {
		t.Fatalf("delete without a step-up: %d", r.Code)
	}
	b.mustStepUp(a, auth.One(auth.ActionDeleteSecret, 0, "other"))
	if r := b.htmx(http.MethodPost, "/secrets/delete", del); r.Code != http.StatusForbidden {
		t.Fatalf("a step-up for another secret deleted this one: %d", r.Code)
	}
	b.mustStepUp(a, auth.One(auth.ActionDeleteSecret, 0, "vikunja_token"))
	if r := b.htmx(http.MethodPost, "/secrets/delete", del); r.Code != http.StatusOK || strings.Contains(r.Body.String(), `data-secret="vikunja_token"`) {
		t.Fatalf("delete: %d", r.Code)
	}
	// Locked: nothing can be set, whatever the session held.
	b.mustStepUp(a, auth.One(auth.ActionSetSecret, 0, "vikunja_token"))
	vf.gate.Lock()
	if r := b.htmx(http.MethodPost, "/secrets", form); r.Code != http.StatusLocked {
		t.Fatalf("set while locked: %d", r.Code)
	}
}

func TestNewRecoveryCodeReplacesTheOldOne(t *testing.T) {
	vf := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	b, oldCode := vf.setUp(a)
	if r := b.htmx(http.MethodPost, "/secrets/recovery", nil); r.Code != http.StatusForbidden {
		t.Fatalf("new code without step-up: %d", r.Code)
	}
	b.mustStepUp(a, auth.One(auth.ActionRotateRecovery, 0, ""))
	r := b.htmx(http.MethodPost, "/secrets/recovery", nil)
	if r.Code != http.StatusOK {
		t.Fatalf("new code: %d", r.Code)
	}
	i := strings.Index(r.Body.String(), "<code data-recovery-code>")
	if i < 0 {
		t.Fatalf("no code shown:\n%s", r.Body.String())
	}
	newCode := r.Body.String()[i+len("<code data-recovery-code>"):]
	newCode = newCode[:strings.Index(newCode, "</code>")]
	// The code may wrap only at its hyphens: a break opportunity after each, none elsewhere.
	if strings.Count(newCode, "-<wbr>") != 6 {
		t.Fatalf("the code %q does not offer a break after each hyphen", newCode)
	}
	newCode = strings.ReplaceAll(newCode, "<wbr>", "")
	if newCode == oldCode || len(newCode) != 34 {
		t.Fatalf("new code %q, old %q", newCode, oldCode)
	}
	// Shown once: the page does not show it again.
	if strings.Contains(b.get("/secrets").Body.String(), newCode) {
		t.Fatal("the new code is shown again")
	}
	vf.gate.Lock()
	if r := vf.browser().recovery(oldCode); r.Code != http.StatusBadRequest {
		t.Fatalf("the old code: %d", r.Code)
	}
	wantRedirect(t, "the new code", vf.browser().recovery(newCode), "/login?why=recovered")
}

func TestRemovedPasskeyCannotUnlock(t *testing.T) {
	vf := newVaultFixture(t, "")
	laptop := authtest.New(testOrigin)
	b, _ := vf.setUp(laptop)
	phone := authtest.New(testOrigin)
	b.addPasskey(laptop, phone, "Phone")
	rec, ans := b.enroll(phone, 2)
	if rec.Code != http.StatusOK || !ans.OK || ans.RecoveryCode != "" {
		t.Fatalf("enroll the second passkey: %s", rec.Body.String())
	}
	if in, _ := vf.gate.PRFInputs(t.Context()); len(in) != 2 {
		t.Fatalf("%d slots", len(in))
	}
	b.mustStepUp(laptop, auth.One(auth.ActionRemovePasskey, 2, ""))
	if r := b.htmx(http.MethodPost, "/passkeys/2/remove", nil); r.Code != http.StatusOK {
		t.Fatalf("remove: %d", r.Code)
	}
	if in, _ := vf.gate.PRFInputs(t.Context()); len(in) != 1 {
		t.Fatalf("%d slots after removing a passkey", len(in))
	}
}
