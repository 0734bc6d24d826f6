package handlers_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"maven/app/auth/authtest"
	"maven/handlers"
)

// The attacks of issue 10, items 4 and 5, over real HTTP: anonymous clients flood the endpoints
// anyone can reach, each request without a cookie and, through the trusted proxy's
// X-Forwarded-For, from an address of its own (or all from one). The owner's ceremonies must come
// through untouched, and the flood must leave nothing in the database.

// floodSources names the address of the i-th request of a flood: each its own /64.
func floodSources(i int) string { return fmt.Sprintf("2001:db8:%x:%x::1", i>>16, i&0xffff) }

// oneSource sends every request of a flood from one address.
func oneSource(int) string { return "203.0.113.7" }

// flood sends n cookieless POSTs with body to path over real HTTP from 8 workers, the i-th from
// source(i), and counts the answers by status.
func flood(t *testing.T, f *fixture, path, body string, n int, source func(int) string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	next := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				req.Host = testHost
				req.Header.Set("Content-Type", contentTypeOf(body))
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Origin", testOrigin)
				req.Header.Set("Sec-Fetch-Site", "same-origin")
				req.Header.Set("X-Forwarded-For", source(i))
				res, err := noRedirects.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return counts
}

func contentTypeOf(body string) string {
	if strings.HasPrefix(body, "{") {
		return "application/json"
	}
	return "application/x-www-form-urlencoded"
}

// TestOwnerStepUpSurvivesAnonymousFlood: 1,100 cookieless sign-ins from 1,100 addresses — more
// than the 1,024 anonymous ceremonies Maven holds — while the owner steps up, over and over, and
// in a second tab has one step-up begun before the flood and finished after it. Every step-up
// succeeds.
func TestOwnerStepUpSurvivesAnonymousFlood(t *testing.T) {
	f := newFixture(t)
	f.listen()
	a := authtest.New(testOrigin)
	b := f.signUp(a)
	tool := f.propose("restart_router")

	tab := f.browser()
	mustOK(t, "login in a second tab", tab.login(a))
	held := tab.beginStepUp(enableOf(tool)) // spans the whole flood
	done := make(chan map[int]int)
	go func() { done <- flood(t, f, "/login/begin", "{}", 1100, floodSources) }()
	attempts, ok := 0, 0
	var counts map[int]int
	for counts == nil {
		attempts++
		if _, r := b.stepUp(a, enableOf(tool)); r.Code == http.StatusOK {
			ok++
		} else {
			t.Errorf("step-up %d during the flood: %d %s", attempts, r.Code, r.Body.String())
		}
		select {
		case counts = <-done:
		default:
		}
	}
	cred, err := a.Get(held.Options)
	if err != nil {
		t.Fatal(err)
	}
	attempts++
	if r := tab.postJSON("/step-up/finish", map[string]any{"credential": jsonRaw(cred)}, nil); r.Code == http.StatusOK {
		ok++
	} else {
		t.Errorf("the step-up begun before the flood: %d %s", r.Code, r.Body.String())
	}
	t.Logf("owner step-ups during a 1,100-request flood of POST /login/begin: %d of %d succeeded (%.0f %%); flood answers %v",
		ok, attempts, 100*float64(ok)/float64(attempts), counts)
	if counts[http.StatusServiceUnavailable] == 0 || counts[http.StatusOK] > 1024 {
		t.Errorf("the flood %v never filled the anonymous share: it proves nothing", counts)
	}
	mustOK(t, "enable with the last step-up", b.enable(tool))
}

// TestPhoneUnlockSurvivesAnonymousFlood: the daemon is locked; the phone begins its unlock;
// 1,100 cookieless unlock begins arrive from 1,100 addresses, then 1,100 more from one; the
// phone's gesture still unlocks, and a phone that begins only now gets through too.
func TestPhoneUnlockSurvivesAnonymousFlood(t *testing.T) {
	f := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	f.setUp(a)
	f.boot() // a restart: locked
	f.listen()
	phone := f.browser()
	var begin beginAnswer
	mustOK(t, "unlock begin", phone.postJSON("/unlock/begin", map[string]any{}, &begin))

	many := flood(t, f, "/unlock/begin", "{}", 1100, floodSources)
	one := flood(t, f, "/unlock/begin", "{}", 1100, oneSource)
	t.Logf("unlock begins from 1,100 addresses: %v; from one address: %v", many, one)
	if many[http.StatusServiceUnavailable] == 0 {
		t.Errorf("the flood %v never filled the anonymous share", many)
	}
	if one[http.StatusTooManyRequests] < 1100-20 {
		t.Errorf("one address got %v: its budget is a few begins", one)
	}

	cred, err := a.Get(begin.Options)
	if err != nil {
		t.Fatal(err)
	}
	var ans unlockAnswer
	if r := phone.postJSON("/unlock/finish", map[string]any{"credential": jsonRaw(cred)}, &ans); r.Code != http.StatusOK || !ans.OK {
		t.Fatalf("the phone's unlock after the flood: %d %+v", r.Code, ans)
	}
	if f.gate.Locked() {
		t.Fatal("still locked")
	}
}

// TestAnonymousPostsStoreNoSession: 2,000 cookieless POSTs to every endpoint anyone can reach,
// from 2,000 addresses, write no session row; the owner's sign-in writes one.
func TestAnonymousPostsStoreNoSession(t *testing.T) {
	f := newFixture(t)
	f.listen()
	a := authtest.New(testOrigin)
	f.signUp(a)
	before := sessionRows(t, f)
	posts := []struct{ path, body string }{
		{"/login/begin", "{}"}, {"/login/finish", `{"credential":{}}`}, {"/setup/begin", `{"token":"nope"}`},
		{"/setup/finish", `{"credential":{}}`}, {"/unlock/begin", "{}"}, {"/unlock/finish", `{"credential":{}}`},
		{"/unlock/recovery", "code=nope"}, {"/logout", ""}, {"/lock", ""}, {"/step-up/begin", "{}"},
		{"/tools/1/enable", "fingerprint=x"}, {"/login/begin", "not json"},
	}
	per := 2000 / len(posts)
	total := map[int]int{}
	for i, p := range posts {
		n := per
		if i == len(posts)-1 {
			n = 2000 - per*(len(posts)-1)
		}
		offset := i * per
		for status, c := range flood(t, f, p.path, p.body, n, func(j int) string { return floodSources(offset + j) }) {
			total[status] += c
		}
	}
	after := sessionRows(t, f)
	t.Logf("session rows written by 2,000 anonymous POSTs: %d (answers %v)", after-before, total)
	if after != before {
		t.Fatalf("anonymous POSTs wrote %d session rows", after-before)
	}
	// The owner's normal path: a sign-in is a session.
	mustOK(t, "login", f.browser().login(a))
	if got := sessionRows(t, f); got != after+1 {
		t.Fatalf("a sign-in wrote %d session rows, want 1", got-after)
	}
}

func sessionRows(t *testing.T, f *fixture) int {
	t.Helper()
	var n int
	if err := f.db.QueryRowContext(t.Context(), "SELECT count(*) FROM sessions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOwnerUnlocksThroughAFloodFromItsOwnAddress: a stranger behind the owner's NAT (one
// address for both) spends that address's budget of unlock begins, and keeps it spent with one
// begin every 30 s. The owner's phone, in which a passkey proved the owner before, begins on a
// budget of its own and unlocks; a new browser, or one with a forged marker, at that address
// waits like the stranger; and the phone's own budget is a budget too.
func TestOwnerUnlocksThroughAFloodFromItsOwnAddress(t *testing.T) {
	f := newVaultFixture(t, "")
	a := authtest.New(testOrigin)
	phone, code := f.setUp(a)
	marker := phone.cookies["maven_browser"]
	if marker == nil || marker.MaxAge < 300*24*3600 || !marker.HttpOnly || marker.SameSite != http.SameSiteStrictMode {
		t.Fatalf("after setup the phone holds the marker %+v, want a long-lived HttpOnly SameSite=Strict cookie", marker)
	}
	f.boot() // a restart: locked; the marker's key is in the database
	f.listen()
	home, _, _ := strings.Cut(phone.addr, ":")
	sameAddress := func(int) string { return home }

	counts := flood(t, f, "/unlock/begin", "{}", 60, sameAddress)
	if counts[http.StatusTooManyRequests] < 60-10 {
		t.Fatalf("the flood from the owner's address got %v: its budget is a few begins", counts)
	}
	for range 3 {
		// One begin every 30 s keeps the address's budget spent.
		f.clock.Advance(30 * time.Second)
		flood(t, f, "/unlock/begin", "{}", 1, sameAddress)

		stranger := f.browser()
		stranger.addr = phone.addr
		if r := stranger.postJSON("/unlock/begin", map[string]any{}, nil); r.Code != http.StatusTooManyRequests {
			t.Fatalf("a new browser at the owner's address during the flood: %d, want 429", r.Code)
		}
		forged := *marker
		b := []byte(marker.Value)
		b[5] = map[bool]byte{true: 'B', false: 'A'}[b[5] == 'A'] // another id, the same signature
		forged.Value = string(b)
		stranger.cookies[forged.Name] = &forged
		if r := stranger.postJSON("/unlock/begin", map[string]any{}, nil); r.Code != http.StatusTooManyRequests {
			t.Fatalf("a forged marker at the owner's address: %d, want 429", r.Code)
		}

		if r, ans := phone.unlockWith(a, nil); r.Code != http.StatusOK || !ans.OK {
			t.Fatalf("the phone's unlock during the flood: %d %+v", r.Code, ans)
		}
		if f.gate.Locked() {
			t.Fatal("still locked")
		}
		if r := phone.do(http.MethodPost, "/lock", nil, nil); r.Code != http.StatusSeeOther || !f.gate.Locked() {
			t.Fatalf("lock: %d", r.Code)
		}
	}

	// The recovery code likewise: the stranger's guesses spend the address's budget, and the
	// phone's code still unlocks.
	f.clock.Advance(time.Minute)
	guesses := flood(t, f, "/unlock/recovery", "code=AAAA-BBBB-CCCC-DDDD-EEEE-FFFF-GGGG", handlers.RecoveryBurst+3, sameAddress)
	if guesses[http.StatusTooManyRequests] == 0 {
		t.Fatalf("the stranger's guesses %v never spent the address's budget", guesses)
	}
	f.clock.Advance(handlers.RecoveryTotalEvery) // what all sources together may try refills
	stranger := f.browser()
	stranger.addr = phone.addr
	if r := stranger.recovery(code); r.Code != http.StatusTooManyRequests || !f.gate.Locked() {
		t.Fatalf("a new browser's recovery code at the owner's address during the guesses: %d", r.Code)
	}
	if r := phone.recovery(code); r.Code != http.StatusSeeOther || f.gate.Locked() {
		t.Fatalf("the phone's recovery code during the guesses: %d %s", r.Code, r.Body.String())
	}

	// The phone's own budget is the same few begins, then one every 30 s.
	limited := 0
	for range 10 {
		if r := phone.postJSON("/unlock/begin", map[string]any{}, nil); r.Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("a known browser begins without any limit")
	}
}
